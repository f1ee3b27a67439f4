import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { placeProblems } from './definition-lines.js';

const yaml = `system: shop
services:
  /web:
    image: bb:1
    instances: -1
    ports: [8080, 8080]
  /db:
    image: bb:1
jobs:
  /migrate:
    image: bb:1
`;

describe('placeProblems: each server problem at its line of the pasted YAML', () => {
  it('a service field at its key, a service without that field at the service, a job at its key', () => {
    const placed = placeProblems(yaml, [
      { path: '/web', field: 'instances', message: 'must be at least 0' },
      { path: '/web', field: 'ports', message: 'port 8080 is listed twice' },
      { path: '/db', field: 'monitor', message: 'port 1 is not in ports' },
      { path: '/migrate', field: '', message: 'declared both as a service and as a job' },
    ]);
    assert.deepEqual(
      placed.map((p) => p.line),
      [5, 6, 7, 10],
    );
  });

  it('top-level fields, YAML errors that carry a line, and paths not in the text', () => {
    const placed = placeProblems(yaml, [
      { path: '/', field: 'services', message: 'x' },
      { path: '/', field: '', message: 'YAML cannot be read: YAML line 4: Map keys must be unique' },
      { path: '/nope', field: 'image', message: 'y' },
    ]);
    assert.deepEqual(
      placed.map((p) => p.line),
      [2, 4, 0],
    );
  });

  it('survives text that is not YAML at all', () => {
    assert.deepEqual(
      placeProblems(':\n  - ]', [{ path: '/x', field: 'a', message: 'm' }]).map((p) => p.line),
      [0],
    );
  });
});
