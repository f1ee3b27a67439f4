import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { actualRecord, cellRecord, taskRecord } from '../../testing/console-records.js';
import { type ConsoleEvent, eventFacts, isBbsEvent, isSystemChange } from './event-facts.js';

const at = { id: '1-1', created_at: '2026-11-25T10:00:00.000Z' };

describe('event facts: every kind on GET /v1/events, known or not', () => {
  it('BBS records give their subject, system, cell and state', () => {
    const changed: ConsoleEvent = {
      ...at,
      type: 'actual_lrp_changed',
      before: actualRecord('web', 1),
      after: actualRecord('web', 1, { domain: 'system-shop', state: 'CRASHED', cell_id: 'c2' }),
    };
    assert.deepEqual(eventFacts(changed), {
      ...at,
      type: 'actual_lrp_changed',
      subject: 'web/1',
      system: 'shop',
      cell_id: 'c2',
      state: 'CRASHED',
    });
    const task: ConsoleEvent = { ...at, type: 'task_created', task: taskRecord('t1') };
    assert.equal(eventFacts(task).subject, 't1');
  });

  it("history's container status changes give the container's owner, system, cell and status", () => {
    const event = {
      ...at,
      type: 'container_status_changed',
      container: {
        id: 'g1',
        image: 'bb:1',
        cell_id: 'c1',
        owner_kind: 'system',
        owner_id: 'shop/web',
        system: 'shop',
        status: 'Running',
        status_time: at.created_at,
      },
      item: {
        id: 'h1',
        status: 'Running',
        time_recorded: at.created_at,
        external_timestamp: null,
        exit_code: null,
        entity_type: 'event',
        entity_id: null,
        message: null,
      },
    } as ConsoleEvent;
    assert.equal(isBbsEvent(event), false);
    assert.deepEqual(eventFacts(event), {
      ...at,
      type: 'container_status_changed',
      subject: 'shop/web',
      system: 'shop',
      cell_id: 'c1',
      state: 'Running',
    });
  });

  it('a kind the console does not know is shown by its type and is not a BBS record change', () => {
    const event: ConsoleEvent = { ...at, type: 'volume_created' };
    assert.deepEqual(eventFacts(event), {
      ...at,
      type: 'volume_created',
      subject: '',
      system: '',
      cell_id: '',
      state: '',
    });
    assert.equal(isBbsEvent(event), false);
  });

  it("cells' presences give the cell; a system's model change gives the system", () => {
    const appeared: ConsoleEvent = { ...at, type: 'cell_appeared', cell: cellRecord('c1') };
    assert.equal(isBbsEvent(appeared), true);
    assert.deepEqual(eventFacts(appeared), {
      ...at,
      type: 'cell_appeared',
      subject: 'c1',
      system: '',
      cell_id: 'c1',
      state: 'appeared',
    });
    const gone: ConsoleEvent = { ...at, type: 'cell_disappeared', cell_id: 'c1', reason: 'expired' };
    assert.equal(eventFacts(gone).state, 'expired');
    const changed: ConsoleEvent = { ...at, type: 'system_changed', system: 'shop' } as ConsoleEvent;
    assert.equal(isSystemChange(changed), true);
    assert.equal(isBbsEvent(changed), false);
    assert.deepEqual(eventFacts(changed), {
      ...at,
      type: 'system_changed',
      subject: 'shop',
      system: 'shop',
      cell_id: '',
      state: 'changed',
    });
  });
});
