import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compareValues,
  queryFromSearch,
  queryToSearch,
  runTableQuery,
  type TableQuery,
} from './table-query.js';

interface Row {
  name: string;
  state: string;
  crashes: number;
}
const rows: Row[] = [
  { name: 'web-10', state: 'RUNNING', crashes: 0 },
  { name: 'web-9', state: 'CRASHED', crashes: 4 },
  { name: 'db-1', state: 'RUNNING', crashes: 1 },
];
const defaults: TableQuery<Row> = { text: '', equals: {}, sortBy: 'name', direction: 'asc' };

describe('table queries', () => {
  it('sorts text with numbers as numbers, and numbers by value, both ways', () => {
    assert.deepEqual(
      runTableQuery(rows, defaults, ['name']).map((r) => r.name),
      ['db-1', 'web-9', 'web-10'],
    );
    const byCrashes = runTableQuery(rows, { ...defaults, sortBy: 'crashes', direction: 'desc' }, ['name']);
    assert.deepEqual(
      byCrashes.map((r) => r.crashes),
      [4, 1, 0],
    );
    assert.ok(compareValues(false, true) < 0);
  });

  it('every word must match some searched field; equals filters exactly', () => {
    assert.deepEqual(
      runTableQuery(rows, { ...defaults, text: 'WEB running' }, ['name', 'state']).map((r) => r.name),
      ['web-10'],
    );
    assert.deepEqual(
      runTableQuery(rows, { ...defaults, equals: { state: 'CRASHED' } }, ['name']).map((r) => r.name),
      ['web-9'],
    );
    assert.equal(runTableQuery(rows, { ...defaults, text: 'nothing' }, ['name', 'state']).length, 0);
  });

  it('a query survives the URL: defaults are left out, unknown sort fields fall back', () => {
    const query: TableQuery<Row> = {
      text: 'web',
      equals: { state: 'RUNNING' },
      sortBy: 'crashes',
      direction: 'desc',
    };
    const search = queryToSearch(query, defaults);
    assert.equal(search, '?q=web&state=RUNNING&sort=crashes&dir=desc');
    assert.deepEqual(queryFromSearch(search, defaults, ['name', 'state', 'crashes'], ['state']), query);
    assert.equal(queryToSearch(defaults, defaults), '');
    assert.deepEqual(queryFromSearch('?sort=evil&dir=up', defaults, ['name'], ['state']), defaults);
  });
});
