import type { ActualLRP } from '../bbs/index.js';
import type { ExecutorContainer } from '../executor/index.js';

/**
 * Each LRP container's record as its rep last claimed, wrote or listed it, so that the reconciles
 * of a start and of quiet passes need no read. A copy is handed out only while it is the
 * container's own ("by A", its instance guid, not evacuating): every write such a row makes is a
 * CAS or CAD on its tag, so a stale copy costs a lost write (which forgets it), never a wrong
 * delete. The rows that delete without a write are decided by a fresh read.
 */
export class KnownRecords {
  readonly #cellId: string;
  readonly #records = new Map<string, ActualLRP>();

  constructor(cellId: string) {
    this.#cellId = cellId;
  }

  /** The copy for `container`, if there is one and it is the container's own record. */
  for(container: ExecutorContainer): ActualLRP | undefined {
    const known = this.#records.get(container.guid);
    return known !== undefined && this.#isOwn(known, container) ? known : undefined;
  }

  /** What a claim or a reconcile left the record as (null or not its own: forgotten). */
  wrote(container: ExecutorContainer, record: ActualLRP | null): void {
    if (record && this.#isOwn(record, container)) this.#records.set(container.guid, record);
    else this.#records.delete(container.guid);
  }

  /**
   * A polling pass's copy (absent: the list did not hold it by this cell and instance). The newer
   * of it and the copy kept is kept; with none, the next reconcile reads. `busy`: a reconcile of
   * the container is in flight and may be writing what the list was read too early to hold.
   */
  listed(guid: string, listed: ActualLRP | undefined, busy: boolean): void {
    const known = this.#records.get(guid);
    if (!listed) {
      if (!busy) this.#records.delete(guid);
      return;
    }
    if (!known || !sameEpochNotOlder(known, listed)) this.#records.set(guid, listed);
  }

  forget(guid: string): void {
    this.#records.delete(guid);
  }

  /** Forgets the copies of containers that are gone (their reconcile no longer runs). */
  keepOnly(exists: (guid: string) => boolean): void {
    for (const guid of this.#records.keys()) if (!exists(guid)) this.#records.delete(guid);
  }

  #isOwn(record: ActualLRP, container: ExecutorContainer): boolean {
    const tags = container.tags;
    return (
      tags.kind === 'lrp' &&
      record.cell_id === this.#cellId &&
      !record.evacuating &&
      record.instance_guid === tags.instance_guid &&
      record.process_guid === tags.process_guid &&
      record.index === tags.index
    );
  }
}

/** Whether `a` is `b`'s record at the same or a later change (never true across a re-creation). */
function sameEpochNotOlder(a: ActualLRP, b: ActualLRP): boolean {
  return (
    a.modification_tag.epoch === b.modification_tag.epoch &&
    a.modification_tag.index >= b.modification_tag.index
  );
}
