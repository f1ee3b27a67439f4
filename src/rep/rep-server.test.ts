import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { limits } from '../core/index.js';
import type { Rep } from './rep.js';
import type { RepStopRequest, RepWork } from './rep-api.js';
import { buildRepApp } from './rep-server.js';

/**
 * The rep's HTTP validation (issue 17): what the auctioneer may send is bounded as the BBS bounds
 * it, and bad text or deep nesting never reaches the rep. The rep below the routes is a recorder:
 * these tests are about what the routes let through (the real rep is tested in cell.test.ts).
 */
function recordingRep(): { rep: Rep; work: RepWork[]; stops: RepStopRequest[] } {
  const work: RepWork[] = [];
  const stops: RepStopRequest[] = [];
  const rep = {
    cellId: 'cell-1',
    state: () => ({}),
    perform: async (w: RepWork) => {
      work.push(w);
      return { failed_lrps: [], failed_tasks: [] };
    },
    stopInstance: async (req: RepStopRequest) => {
      stops.push(req);
    },
    evacuate: async () => {},
  } as unknown as Rep;
  return { rep, work, stops };
}

const lrp = (fields: Record<string, unknown> = {}) => ({
  process_guid: 'p',
  domain: 'd',
  index: 0,
  memory_mb: 64,
  disk_mb: 64,
  placement_tags: [],
  ...fields,
});

/** The rep answers only callers with its token (rep-server.ts): these requests come from the server. */
const repToken = 'a'.repeat(43);
const authorization = `Bearer ${repToken}`;

describe('rep HTTP API bounds', () => {
  it('takes work within the bounds', async () => {
    const { rep, work } = recordingRep();
    const app = buildRepApp(rep, { token: repToken });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/work',
      headers: { authorization },
      payload: { lrps: [lrp()], tasks: [] },
    });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(work.length, 1);
  });

  it('refuses work past a bound, bad text and deep nesting with a 400, and performs none of it', async () => {
    const { rep, work, stops } = recordingRep();
    const app = buildRepApp(rep, { token: repToken });
    const bodies: unknown[] = [
      { lrps: Array.from({ length: limits.maxBatchItems + 1 }, () => lrp()), tasks: [] },
      { lrps: [lrp({ memory_mb: 2 ** 53 })], tasks: [] },
      { lrps: [lrp({ index: 2 ** 31 })], tasks: [] },
      { lrps: [lrp({ process_guid: 'p\u0000' })], tasks: [] },
      { lrps: [lrp({ domain: '\ud800' })], tasks: [] },
      {
        lrps: [],
        tasks: [{ task_guid: 't', domain: 'd', memory_mb: 1, disk_mb: 1, placement_tags: ['x'.repeat(300)] }],
      },
    ];
    for (const payload of bodies) {
      const res = await app.inject({
        method: 'POST',
        url: '/v1/work',
        headers: { authorization },
        payload: payload as object,
      });
      assert.equal(res.statusCode, 400, `${res.body} for ${JSON.stringify(payload).slice(0, 200)}`);
    }
    const deep = `{"lrps":${'['.repeat(10_000)}${']'.repeat(10_000)},"tasks":[]}`;
    const nested = await app.inject({
      method: 'POST',
      url: '/v1/work',
      payload: deep,
      headers: { authorization, 'content-type': 'application/json' },
    });
    assert.equal(nested.statusCode, 400, nested.body);
    const stop = await app.inject({
      headers: { authorization },
      method: 'POST',
      url: '/v1/stop',
      payload: { process_guid: 'p', index: 2 ** 53, instance_guid: 'i' },
    });
    assert.equal(stop.statusCode, 400, stop.body);
    assert.deepEqual(work, []);
    assert.deepEqual(stops, []);
  });
});
