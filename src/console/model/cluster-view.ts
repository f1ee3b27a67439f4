import type {
  ActualLRP,
  BbsEvent,
  CellPresence,
  DesiredLRP,
  ModificationTag,
  Task,
} from '../../bbs/index.js';

/** What the console lists once when it (re)connects, before it follows the event stream. */
export interface ClusterSnapshot {
  readonly desired: readonly DesiredLRP[];
  readonly actual: readonly ActualLRP[];
  readonly tasks: readonly Task[];
  readonly cells: readonly CellPresence[];
}

/**
 * The console's copy of the cluster: a snapshot, then every BBS event applied in order. The event
 * stream is opened before the snapshot is read (list-then-watch the other way round), so an event
 * may describe a record older than the snapshot's copy: each record's modification tag decides,
 * so an older version of an incarnation never replaces a newer one, nor does an old removal delete
 * a re-created record. Every later event follows, so the view ends where the BBS is. Mutable maps and a version number rather than immutable copies: at 10,000 instances a
 * copy per event would cost more than the page's rendering.
 */
export class ClusterView {
  readonly desired = new Map<string, DesiredLRP>();
  readonly actual = new Map<string, ActualLRP>();
  readonly tasks = new Map<string, Task>();
  cells: readonly CellPresence[] = [];
  /** Bumped by every change that a view could show. */
  version = 0;

  load(snapshot: ClusterSnapshot): void {
    this.desired.clear();
    this.actual.clear();
    this.tasks.clear();
    for (const lrp of snapshot.desired) this.desired.set(lrp.process_guid, lrp);
    for (const lrp of snapshot.actual) this.actual.set(actualKey(lrp), lrp);
    for (const task of snapshot.tasks) this.tasks.set(task.task_guid, task);
    this.cells = snapshot.cells;
    this.version++;
  }

  setCells(cells: readonly CellPresence[]): void {
    this.cells = cells;
    this.version++;
  }

  /** Applies one event; false when it was older than what the view holds (nothing changed). */
  apply(event: BbsEvent): boolean {
    const changed = this.#apply(event);
    if (changed) this.version++;
    return changed;
  }

  #putCell(cell: CellPresence): boolean {
    this.cells = [...this.cells.filter((c) => c.cell_id !== cell.cell_id), cell].sort(byCellId);
    return true;
  }

  #apply(event: BbsEvent): boolean {
    switch (event.type) {
      case 'desired_lrp_created':
        return upsert(this.desired, event.desired_lrp.process_guid, event.desired_lrp);
      case 'desired_lrp_changed':
        return upsert(this.desired, event.after.process_guid, event.after);
      case 'desired_lrp_removed':
        return remove(this.desired, event.desired_lrp.process_guid, event.desired_lrp);
      case 'actual_lrp_created':
        return upsert(this.actual, actualKey(event.actual_lrp), event.actual_lrp);
      case 'actual_lrp_changed':
        // Evacuation moves a record between keys: the old key goes with the change.
        if (actualKey(event.before) !== actualKey(event.after))
          remove(this.actual, actualKey(event.before), event.before);
        return upsert(this.actual, actualKey(event.after), event.after);
      case 'actual_lrp_removed':
        return remove(this.actual, actualKey(event.actual_lrp), event.actual_lrp);
      case 'task_created':
        return upsert(this.tasks, event.task.task_guid, event.task);
      case 'task_changed':
        return upsert(this.tasks, event.after.task_guid, event.after);
      case 'task_removed':
        return remove(this.tasks, event.task.task_guid, event.task);
      case 'cell_appeared':
        return this.#putCell(event.cell);
      case 'cell_changed':
        return this.#putCell(event.after);
      case 'cell_disappeared': {
        // Presences carry no modification tag: events come in commit order, so the last one about
        // a cell is where it is (an appearance after this removal is a later event).
        const kept = this.cells.filter((c) => c.cell_id !== event.cell_id);
        if (kept.length === this.cells.length) return false;
        this.cells = kept;
        return true;
      }
    }
  }
}

/** Sorted by cell id, as the API lists them. */
function byCellId(a: CellPresence, b: CellPresence): number {
  return a.cell_id < b.cell_id ? -1 : a.cell_id > b.cell_id ? 1 : 0;
}

/** An index's running record and its evacuating copy are two rows, as in the BBS. */
export function actualKey(lrp: Pick<ActualLRP, 'process_guid' | 'index' | 'evacuating'>): string {
  return `${lrp.process_guid}/${lrp.index}${lrp.evacuating ? '#evacuating' : ''}`;
}

interface Tagged {
  readonly modification_tag: ModificationTag;
}

/** Newer or the same version: a record re-created under a new epoch is always newer. */
function atLeastAsNew(incoming: ModificationTag, held: ModificationTag): boolean {
  return incoming.epoch !== held.epoch || incoming.index >= held.index;
}

function upsert<T extends Tagged>(map: Map<string, T>, key: string, incoming: T): boolean {
  const held = map.get(key);
  if (held && !atLeastAsNew(incoming.modification_tag, held.modification_tag)) return false;
  map.set(key, incoming);
  return true;
}

function remove<T extends Tagged>(map: Map<string, T>, key: string, removed: T): boolean {
  const held = map.get(key);
  if (!held) return false;
  // Another epoch is another incarnation of the key, and a newer index of the same one was written
  // after this removal was read: either way the held record stays.
  const tag = held.modification_tag;
  if (tag.epoch !== removed.modification_tag.epoch || tag.index > removed.modification_tag.index)
    return false;
  map.delete(key);
  return true;
}
