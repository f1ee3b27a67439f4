import type { BbsEvent, BbsEventType } from '../../bbs/index.js';
import type { ContainerStatusEvent } from '../../history/index.js';
import { systemOfDomain } from './cluster-summary.js';

/**
 * What `GET /v1/events` carries: the BBS's record changes, and the history's container status
 * changes (the event bus of seed 001), each with its cursor and time. A server may add kinds; the
 * console shows what it knows and names the rest by their type.
 */
export type ConsoleEvent =
  | BbsEvent
  | (ContainerStatusEvent & { readonly id: string; readonly created_at: string })
  | { readonly type: string; readonly id: string; readonly created_at: string };

/** A model write that changed a system (its units' lives, a deploy's progress or end). */
export interface SystemChangedEvent {
  readonly type: 'system_changed';
  readonly system: string;
  readonly id: string;
  readonly created_at: string;
}

export function isSystemChange(event: ConsoleEvent): event is SystemChangedEvent {
  return event.type === 'system_changed' && typeof (event as Partial<SystemChangedEvent>).system === 'string';
}

export function isBbsEvent(event: ConsoleEvent): event is BbsEvent {
  return Object.hasOwn(bbsEventTypes, event.type);
}

/** Every BBS event type: a type added to the BBS and missing here fails to compile. */
const bbsEventTypes: Readonly<Record<BbsEventType, true>> = {
  desired_lrp_created: true,
  desired_lrp_changed: true,
  desired_lrp_removed: true,
  actual_lrp_created: true,
  actual_lrp_changed: true,
  actual_lrp_removed: true,
  task_created: true,
  task_changed: true,
  task_removed: true,
  cell_appeared: true,
  cell_changed: true,
  cell_disappeared: true,
};

/** An event in the fields the events view shows and filters on. */
export interface EventFacts {
  readonly id: string;
  readonly type: string;
  readonly subject: string;
  readonly system: string;
  readonly cell_id: string;
  readonly state: string;
  readonly created_at: string;
}

export function eventFacts(event: ConsoleEvent): EventFacts {
  const base = { id: event.id, type: event.type, created_at: event.created_at };
  if (isBbsEvent(event)) return { ...base, ...bbsFacts(event) };
  if (event.type === 'container_status_changed' && 'container' in event) {
    const { container, item } = event as ContainerStatusEvent;
    return {
      ...base,
      subject: container.owner_id || container.id,
      system: container.system ?? '',
      cell_id: container.cell_id,
      state: item.status,
    };
  }
  if (isSystemChange(event))
    return { ...base, subject: event.system, system: event.system, cell_id: '', state: 'changed' };
  return { ...base, subject: '', system: '', cell_id: '', state: '' };
}

function bbsFacts(event: BbsEvent): Omit<EventFacts, 'id' | 'type' | 'created_at'> {
  switch (event.type) {
    case 'desired_lrp_created':
    case 'desired_lrp_removed': {
      const d = event.desired_lrp;
      return {
        subject: d.process_guid,
        system: systemOfDomain(d.domain),
        cell_id: '',
        state: `${d.instances} wanted`,
      };
    }
    case 'desired_lrp_changed': {
      const d = event.after;
      return {
        subject: d.process_guid,
        system: systemOfDomain(d.domain),
        cell_id: '',
        state: `${d.instances} wanted`,
      };
    }
    case 'actual_lrp_created':
    case 'actual_lrp_removed':
    case 'actual_lrp_changed': {
      const a = event.type === 'actual_lrp_changed' ? event.after : event.actual_lrp;
      return {
        subject: `${a.process_guid}/${a.index}`,
        system: systemOfDomain(a.domain),
        cell_id: a.cell_id,
        state: a.state,
      };
    }
    case 'task_created':
    case 'task_removed':
    case 'task_changed': {
      const t = event.type === 'task_changed' ? event.after : event.task;
      return { subject: t.task_guid, system: systemOfDomain(t.domain), cell_id: t.cell_id, state: t.state };
    }
    case 'cell_appeared':
      return { subject: event.cell.cell_id, system: '', cell_id: event.cell.cell_id, state: 'appeared' };
    case 'cell_changed':
      return { subject: event.after.cell_id, system: '', cell_id: event.after.cell_id, state: 'changed' };
    case 'cell_disappeared':
      return { subject: event.cell_id, system: '', cell_id: event.cell_id, state: event.reason };
  }
}
