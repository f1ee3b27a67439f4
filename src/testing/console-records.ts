import type { ActualLRP, CellPresence, DesiredLRP, Task } from '../bbs/index.js';

/** Whole BBS records as the public API returns them, for the console's pure tests. */
export function desiredRecord(processGuid: string, extra: Partial<DesiredLRP> = {}): DesiredLRP {
  return {
    process_guid: processGuid,
    domain: 'apps',
    instances: 1,
    image: 'bb:1',
    env: {},
    memory_mb: 64,
    disk_mb: 100,
    ports: [],
    routes: {},
    annotation: '',
    start_timeout_s: 60,
    placement_tags: [],
    created_at: '2026-11-25T10:00:00.000Z',
    modification_tag: { epoch: 'e1', index: 0 },
    ...extra,
  };
}

export function actualRecord(processGuid: string, index: number, extra: Partial<ActualLRP> = {}): ActualLRP {
  return {
    process_guid: processGuid,
    index,
    domain: 'apps',
    instance_guid: `${processGuid}-${index}-guid`,
    cell_id: 'c1',
    state: 'RUNNING',
    crash_count: 0,
    last_crashed_at: null,
    crash_reason: '',
    since: '2026-11-25T10:00:01.000Z',
    placement_error: '',
    address: '10.0.0.1',
    ports: [],
    evacuating: false,
    modification_tag: { epoch: 'a1', index: 0 },
    ...extra,
  };
}

export function taskRecord(taskGuid: string, extra: Partial<Task> = {}): Task {
  return {
    task_guid: taskGuid,
    domain: 'tasks',
    image: 'bb:1',
    env: {},
    memory_mb: 32,
    disk_mb: 50,
    result_file: '',
    completion_callback_url: '',
    placement_tags: [],
    state: 'PENDING',
    cell_id: '',
    result: '',
    failed: false,
    failure_reason: '',
    created_at: '2026-11-25T10:00:00.000Z',
    updated_at: '2026-11-25T10:00:00.000Z',
    first_completed_at: null,
    modification_tag: { epoch: 't1', index: 0 },
    ...extra,
  };
}

export function cellRecord(cellId: string, extra: Partial<CellPresence> = {}): CellPresence {
  return {
    cell_id: cellId,
    zone: 'z1',
    capacity: { memory_mb: 1024, disk_mb: 10_000, containers: 100 },
    rep_url: `http://127.0.0.1:1/${cellId}`,
    placement_tags: [],
    expires_at: '2026-11-25T10:01:00.000Z',
    ...extra,
  };
}
