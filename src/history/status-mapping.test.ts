import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  dockerEventStatuses,
  type FinalizationFacts,
  finalOutcome,
  finalStatusFor,
  isTerminalStatus,
  mapRawStatus,
  statusMappingTable,
  swarmTaskStates,
} from './status-mapping.js';

describe('seed 001 status mapping table', () => {
  // One row per row of the seed's table, spelled as the seed spells it.
  const rows: ReadonlyArray<[string, string]> = [
    ['complete', 'Complete'],
    ['created', 'Created'],
    ['rejected', 'Failed'],
    ['failed', 'Failed'],
    ['start', 'Running'],
    ['started', 'Running'],
    ['running', 'Running'],
    ['kill', 'Killed'],
    ['oom', 'Killed (Out of Memory)'],
    ['starting', 'Starting'],
  ];
  for (const [raw, friendly] of rows) {
    it(`${raw} → ${friendly}`, () => assert.equal(mapRawStatus(raw), friendly));
  }
  it('the table in code has exactly the seed rows', () => {
    assert.deepEqual(Object.entries(statusMappingTable).sort(), [...rows].sort());
  });

  it('die is stored raw until finalization', () => assert.equal(mapRawStatus('die'), 'die'));
  it('create stays raw: the seed maps "created", and its final list keeps "create"', () =>
    assert.equal(mapRawStatus('create'), 'create'));
  it('every unmapped docker event and swarm state is recorded as it is', () => {
    for (const raw of [...dockerEventStatuses, ...swarmTaskStates]) {
      if (raw in statusMappingTable) continue;
      assert.equal(mapRawStatus(raw), raw);
    }
  });
  it('inherited names are not mapped', () => {
    assert.equal(mapRawStatus('constructor'), 'constructor');
    assert.equal(mapRawStatus('toString'), 'toString');
  });

  it("the seed's final status set is what mapping can produce", () => {
    const produced = new Set([...dockerEventStatuses, ...swarmTaskStates].map(mapRawStatus));
    produced.add(finalStatusFor(0));
    produced.add(finalStatusFor(1));
    const seedFinalSet =
      'Created, Running, Complete, Failed, Killed, Killed (Out of Memory), Starting, attach, commit, copy, create, destroy, detach, die, exec_create, exec_detach, exec_start, exec_die, export, health_status, pause, rename, resize, restart, stop, top, unpause, update, new, allocated, pending, assigned, accepted, preparing, ready, shutdown, remove, orphaned'.split(
        ', ',
      );
    // "Created" comes from the service-side "created" row, which neither vocabulary lists.
    produced.add(mapRawStatus('created'));
    assert.deepEqual([...produced].sort(), [...seedFinalSet].sort());
  });
});

describe('final status by exit code', () => {
  const rows: ReadonlyArray<[number | null, string]> = [
    [0, 'Complete'],
    [null, 'Complete'],
    [1, 'Failed'],
    [137, 'Failed'],
    [-1, 'Failed'],
  ];
  for (const [code, status] of rows) {
    it(`exit ${code} → ${status}`, () => assert.equal(finalStatusFor(code), status));
  }
  it('terminal statuses', () => {
    for (const s of ['Complete', 'Failed', 'Killed', 'Killed (Out of Memory)'])
      assert.ok(isTerminalStatus(s));
    for (const s of ['Created', 'Running', 'Starting', 'die', 'destroy', 'create'])
      assert.ok(!isTerminalStatus(s));
  });
});

describe('final outcome of a finalization', () => {
  const rows: ReadonlyArray<[string, FinalizationFacts, string, RegExp | null]> = [
    ['exit 0', { exit_code: 0, error: null }, 'Complete', null],
    ['exit 3', { exit_code: 3, error: null }, 'Failed', null],
    [
      'unreadable logs',
      { exit_code: 0, error: 'cannot read logs' },
      'Failed',
      /^Finalization failed: cannot read logs/,
    ],
    [
      'a launch that never ran (no exit code)',
      { exit_code: null, error: null, failure: 'Cannot find image "nope:1"' },
      'Failed',
      /Cannot find image/,
    ],
    [
      'stopped on request, SIGTERM status',
      { exit_code: 143, error: null, stopped: 'stopped by alice' },
      'Killed',
      /stopped by alice \(exit status 143\)/,
    ],
    [
      'stopped on request, clean exit',
      { exit_code: 0, error: null, stopped: 'stopped by alice' },
      'Complete',
      null,
    ],
    [
      'stopped before it started (no exit status)',
      { exit_code: null, error: null, stopped: 'stopped before it started' },
      'Killed',
      /^stopped before it started$/,
    ],
    [
      'finalization failure wins over a stop',
      { exit_code: 143, error: 'x', stopped: 'stopped' },
      'Failed',
      /Finalization failed/,
    ],
  ];
  for (const [name, fin, status, message] of rows) {
    it(`${name} → ${status}`, () => {
      const outcome = finalOutcome(fin);
      assert.equal(outcome.status, status);
      if (message) assert.match(outcome.message ?? '', message);
      else assert.equal(outcome.message, null);
    });
  }
});
