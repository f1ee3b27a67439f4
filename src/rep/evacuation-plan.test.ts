import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ActualLRP, ActualLRPState, Task, TaskState } from '../bbs/index.js';
import type { ContainerState, ExecutorContainer, LRPContainerTags } from '../executor/index.js';
import { type EvacuationSubject, handOverOver, planExit, planHandOver } from './evacuation-plan.js';

const cell = 'cell-1';
const tag = { epoch: 'e', index: 3 };
const evacTag = { epoch: 'v', index: 1 };
const netInfo = { address: '10.0.0.1', ports: [{ container_port: 8080, host_port: 61000 }] };
const ref = { process_guid: 'p', index: 0 };

type LRPContainer = ExecutorContainer & { readonly tags: LRPContainerTags };

function container(state: ContainerState, over: Partial<ExecutorContainer> = {}): LRPContainer {
  return {
    guid: 'i1',
    state,
    tags: { kind: 'lrp', process_guid: 'p', index: 0, instance_guid: 'i1', domain: 'apps' },
    resource: { memory_mb: 64, disk_mb: 0 },
    ...(state === 'RUNNING' ? { net_info: netInfo } : {}),
    ...over,
  } as LRPContainer;
}

function actual(state: ActualLRPState, over: Partial<ActualLRP> = {}): ActualLRP {
  return {
    process_guid: 'p',
    index: 0,
    domain: 'apps',
    instance_guid: 'i1',
    cell_id: state === 'CLAIMED' || state === 'RUNNING' ? cell : '',
    state,
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: '2030-01-01T00:00:00.000Z',
    placement_error: '',
    address: '',
    ports: [],
    evacuating: false,
    modification_tag: tag,
    ...over,
  };
}

/** The /evacuating copy this cell left when it handed instance i1 over. */
const ownCopy = actual('RUNNING', { evacuating: true, modification_tag: evacTag });

function subject(
  c: LRPContainer,
  instance: ActualLRP | null | undefined,
  moved = false,
  evacuating: ActualLRP | null = null,
): EvacuationSubject {
  return { container: c, group: instance === undefined ? undefined : { instance, evacuating }, moved };
}

describe('evacuation hand-over (seed 002 "Evacuation"), one rule per row', () => {
  it("a RUNNING container of this cell's RUNNING instance is handed over (evacuateRunningActualLRP)", () => {
    assert.deepEqual(planHandOver([subject(container('RUNNING'), actual('RUNNING'))], cell), [
      { kind: 'evacuate', containerGuid: 'i1', ref, expected: tag, netInfo },
    ]);
  });

  it('a RUNNING container whose instance is not RUNNING in the BBS yet waits', () => {
    assert.equal(planHandOver([subject(container('RUNNING'), actual('CLAIMED'))], cell)[0]?.kind, 'wait');
  });

  it('a RUNNING container without net info yet waits', () => {
    const c = container('RUNNING');
    const { net_info: _, ...noNet } = c;
    assert.equal(planHandOver([subject(noNet as LRPContainer, actual('RUNNING'))], cell)[0]?.kind, 'wait');
  });

  it('a RUNNING container whose instance is gone is deleted at once (nothing to hand over)', () => {
    assert.deepEqual(planHandOver([subject(container('RUNNING'), undefined)], cell), [
      { kind: 'delete-container', containerGuid: 'i1', why: 'the instance is not ours' },
    ]);
    assert.equal(planHandOver([subject(container('RUNNING'), null)], cell)[0]?.kind, 'delete-container');
  });

  it('a RUNNING container whose instance went to another cell or claim is deleted at once', () => {
    for (const other of [
      actual('RUNNING', { cell_id: 'cell-2' }),
      actual('RUNNING', { instance_guid: 'i2' }),
    ]) {
      assert.equal(planHandOver([subject(container('RUNNING'), other)], cell)[0]?.kind, 'delete-container');
    }
  });

  it('a container not RUNNING yet is deleted and its instance claimed here unclaimed', () => {
    for (const state of ['CLAIMED', 'RUNNING'] as const) {
      assert.deepEqual(planHandOver([subject(container('CREATED'), actual(state))], cell), [
        { kind: 'delete-container', containerGuid: 'i1', why: 'it never ran here' },
        { kind: 'unclaim', ref, expected: tag },
      ]);
    }
  });

  it("a container not RUNNING yet whose instance is not this cell's is only deleted", () => {
    for (const instance of [
      undefined,
      actual('UNCLAIMED'),
      actual('CRASHED'),
      actual('CLAIMED', { cell_id: 'cell-2' }),
    ]) {
      assert.deepEqual(
        planHandOver([subject(container('RESERVED'), instance)], cell).map((a) => a.kind),
        ['delete-container'],
      );
    }
  });

  it('a handed-over container stays while its replacement is not running', () => {
    for (const state of ['UNCLAIMED', 'CLAIMED'] as const) {
      const instance = actual(state, { cell_id: state === 'CLAIMED' ? 'cell-2' : '', instance_guid: 'i2' });
      assert.equal(
        planHandOver([subject(container('RUNNING'), instance, true, ownCopy)], cell)[0]?.kind,
        'wait',
      );
    }
  });

  it('a handed-over container goes once the replacement runs, crashed, or the instance is gone', () => {
    const replaced = [actual('RUNNING', { cell_id: 'cell-2', instance_guid: 'i2' }), actual('CRASHED'), null];
    for (const instance of replaced) {
      assert.deepEqual(planHandOver([subject(container('RUNNING'), instance, true, ownCopy)], cell), [
        { kind: 'drop-evacuating', containerGuid: 'i1', ref, evacuating: evacTag },
      ]);
    }
  });

  it("a handed-over container never removes another cell's /evacuating copy", () => {
    const othersCopy = actual('RUNNING', { evacuating: true, instance_guid: 'i9', cell_id: 'cell-2' });
    assert.deepEqual(planHandOver([subject(container('RUNNING'), null, true, othersCopy)], cell), [
      { kind: 'drop-evacuating', containerGuid: 'i1', ref, evacuating: undefined },
    ]);
  });
});

describe('evacuation end', () => {
  const deadline = Date.parse('2030-01-01T00:10:00Z');
  it('ends when no container is left, before the deadline', () =>
    assert.equal(handOverOver(0, deadline - 1, deadline), true));
  it('ends after the deadline with containers left', () =>
    assert.equal(handOverOver(3, deadline + 1, deadline), true));
  it('goes on at the deadline itself with containers left', () =>
    assert.equal(handOverOver(3, deadline, deadline), false));
});

function task(state: TaskState, cellId = cell): Task {
  return { task_guid: 't1', state, cell_id: cellId, modification_tag: tag } as Task;
}

describe('evacuation exit (nothing under /evacuating, RUNNING tasks failed)', () => {
  it('every LRP container left drops its own /evacuating copy and goes', () => {
    assert.deepEqual(
      planExit(
        [{ container: container('RUNNING'), group: { instance: null, evacuating: ownCopy } }],
        [],
        cell,
      ),
      [{ kind: 'drop-evacuating', containerGuid: 'i1', ref, evacuating: evacTag }],
    );
  });

  it('an LRP container without a copy (or unreadable) just goes', () => {
    assert.deepEqual(planExit([{ container: container('RUNNING'), group: undefined }], [], cell), [
      { kind: 'drop-evacuating', containerGuid: 'i1', ref, evacuating: undefined },
    ]);
  });

  it('a task RUNNING on this cell is failed, then its container deleted', () => {
    assert.deepEqual(planExit([], [{ containerGuid: 't1', task: task('RUNNING') }], cell), [
      { kind: 'fail-task', taskGuid: 't1', expected: tag },
      { kind: 'delete-container', containerGuid: 't1', why: 'the cell is evacuated' },
    ]);
  });

  it('a task not RUNNING here (completed, elsewhere, gone) only loses its container', () => {
    for (const t of [task('COMPLETED'), task('RUNNING', 'cell-2'), undefined]) {
      assert.deepEqual(
        planExit([], [{ containerGuid: 't1', task: t }], cell).map((a) => a.kind),
        ['delete-container'],
      );
    }
  });
});
