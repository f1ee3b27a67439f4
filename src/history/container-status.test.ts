import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  canonicalTimestamp,
  compareItems,
  dedupeKey,
  foldStatus,
  type StatusItem,
  stepStatus,
} from './container-status.js';
import { isTerminalStatus } from './status-mapping.js';

const t = (s: number) => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();
function item(id: number, status: string, external: number | null, recorded = 100): StatusItem {
  return {
    id: String(id),
    status,
    time_recorded: t(recorded),
    external_timestamp: external === null ? null : t(external),
  };
}

describe('top-level status', () => {
  const cases: ReadonlyArray<[string, StatusItem[], string]> = [
    ['follows the newest item', [item(1, 'create', 1), item(2, 'Running', 2)], 'Running'],
    ['newest by when it happened, not by arrival', [item(1, 'Running', 5), item(2, 'create', 1)], 'Running'],
    ['die after Running', [item(1, 'Running', 1), item(2, 'die', 2)], 'die'],
    ['finalization after die', [item(1, 'die', 2), item(2, 'Complete', null, 10)], 'Complete'],
    [
      'a terminal status is not replaced by a newer non-terminal one',
      [item(1, 'Killed', 1), item(2, 'destroy', 2)],
      'Killed',
    ],
    [
      'a terminal status is replaced by a newer terminal one',
      [item(1, 'Killed', 1), item(2, 'Failed', 2)],
      'Failed',
    ],
    [
      'an older terminal status does not replace a newer terminal one',
      [item(2, 'Failed', 5), item(1, 'Complete', 2)],
      'Failed',
    ],
    [
      'a late old terminal item still wins over non-terminal ones after it',
      [item(1, 'Running', 3), item(2, 'Complete', 2)],
      'Complete',
    ],
    ['same time: arrival order decides', [item(1, 'Running', 2), item(2, 'die', 2)], 'die'],
    [
      'Killed (Out of Memory) is terminal',
      [item(1, 'Killed (Out of Memory)', 2), item(2, 'die', 3)],
      'Killed (Out of Memory)',
    ],
  ];
  for (const [name, items, status] of cases) {
    it(name, () => assert.equal(foldStatus(items)?.status, status));
  }
  it('status_time is the time_recorded of the item that set the status', () => {
    const folded = foldStatus([item(1, 'Running', 1, 50), item(2, 'die', 2, 60)]);
    assert.deepEqual(folded, { status: 'die', status_time: t(60) });
  });
  it('no items, no status', () => assert.equal(foldStatus([]), undefined));
});

const statusArb = fc.constantFrom(
  'Created',
  'Running',
  'die',
  'destroy',
  'Complete',
  'Failed',
  'Killed',
  'Killed (Out of Memory)',
);
const itemsArb = fc
  .array(
    fc.record({
      status: statusArb,
      external: fc.option(fc.integer({ min: 0, max: 50 })),
      recorded: fc.integer({ min: 0, max: 60 }),
    }),
    {
      maxLength: 20,
    },
  )
  .map((rows) => rows.map((r, i) => item(i + 1, r.status, r.external, r.recorded)));

describe('top-level status properties (fast-check)', () => {
  it('does not depend on the order of arrival', () => {
    fc.assert(
      fc.property(itemsArb, fc.integer(), (items, seed) => {
        const shuffled = [...items].sort(
          (a, b) => ((Number(a.id) * 7919 + seed) % 97) - ((Number(b.id) * 7919 + seed) % 97),
        );
        assert.deepEqual(foldStatus(shuffled), foldStatus(items));
      }),
    );
  });
  it('stepping newer items one at a time equals folding them all', () => {
    fc.assert(
      fc.property(itemsArb, (items) => {
        let current: ReturnType<typeof foldStatus>;
        for (const i of [...items].sort(compareItems)) current = stepStatus(current, i);
        assert.deepEqual(current, foldStatus(items));
      }),
    );
  });
  it('once any item is terminal, the status is terminal, and it is the newest terminal item', () => {
    fc.assert(
      fc.property(itemsArb, (items) => {
        const terminal = [...items].sort(compareItems).filter((i) => isTerminalStatus(i.status));
        const folded = foldStatus(items);
        if (terminal.length === 0) return;
        assert.equal(folded?.status, terminal.at(-1)!.status);
      }),
    );
  });
  it('without terminal items, the status is the newest item', () => {
    fc.assert(
      fc.property(itemsArb, (items) => {
        const sorted = [...items].sort(compareItems);
        if (sorted.some((i) => isTerminalStatus(i.status))) return;
        assert.equal(foldStatus(items)?.status, sorted.at(-1)?.status);
      }),
    );
  });
});

describe('dedupe key', () => {
  it('same status, message and external timestamp are the same event', () => {
    const a = { status: 'die', message: null, external_timestamp: t(1) };
    assert.equal(dedupeKey(a), dedupeKey({ ...a }));
  });
  const differ: ReadonlyArray<[string, object]> = [
    ['status', { status: 'Running' }],
    ['message', { message: 'x' }],
    ['external timestamp', { external_timestamp: t(2) }],
    ['a missing external timestamp', { external_timestamp: null }],
  ];
  for (const [name, change] of differ) {
    it(`a different ${name} is a different event`, () => {
      const a = { status: 'die', message: null, external_timestamp: t(1) };
      assert.notEqual(dedupeKey(a), dedupeKey({ ...a, ...change }));
    });
  }
  it('timestamps are canonical: the same instant in two spellings dedupes', () => {
    assert.equal(
      canonicalTimestamp('2024-01-01T01:00:00+01:00'),
      canonicalTimestamp('2024-01-01T00:00:00.000Z'),
    );
    assert.equal(canonicalTimestamp('yesterday'), undefined);
  });
});
