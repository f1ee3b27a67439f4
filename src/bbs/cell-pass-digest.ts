import { createHash } from 'node:crypto';
import type { ModificationTag } from './bbs-types.js';

/** What the digest of a cell's records is made of: each record's key and modification tag (an ActualLRP and a Task are these). */
export interface DigestedActual {
  readonly process_guid: string;
  readonly index: number;
  readonly evacuating: boolean;
  readonly modification_tag: ModificationTag;
}
export interface DigestedTask {
  readonly task_guid: string;
  readonly modification_tag: ModificationTag;
}

/** An ActualLRP's line of the digest: its key and its tag. */
export function actualDigestLine(
  processGuid: string,
  index: number,
  evacuating: boolean,
  tagEpoch: string,
  tagIndex: number,
): string {
  return `a\u0000${processGuid}\u0000${index}\u0000${evacuating ? 1 : 0}\u0000${tagEpoch}\u0000${tagIndex}`;
}

/** A task's line of the digest: its guid and its tag. */
export function taskDigestLine(taskGuid: string, tagEpoch: string, tagIndex: number): string {
  return `t\u0000${taskGuid}\u0000${tagEpoch}\u0000${tagIndex}`;
}

/** The digest of a cell's records' lines, whatever their order (the lines are sorted; `lines` too). */
export function digestOfLines(lines: string[]): string {
  lines.sort();
  return createHash('sha256')
    .update(lines.length === 0 ? '' : `${lines.join('\n')}\n`)
    .digest('base64url');
}

/**
 * A digest of a cell's ActualLRPs and tasks, as its pass lists them, that changes whenever any of
 * them does: every write of a record moves its modification tag (a new record, or one made
 * again, has a new epoch), and a record that comes or goes changes the set. So a rep that sends
 * back the digest of the lists it holds can be told "unchanged" instead of being sent them again
 * (`CellPassRequest.known_digest`). Independent of order.
 */
export function cellPassDigest(actuals: readonly DigestedActual[], tasks: readonly DigestedTask[]): string {
  return digestOfLines([
    ...actuals.map((a) =>
      actualDigestLine(
        a.process_guid,
        a.index,
        a.evacuating,
        a.modification_tag.epoch,
        a.modification_tag.index,
      ),
    ),
    ...tasks.map((t) => taskDigestLine(t.task_guid, t.modification_tag.epoch, t.modification_tag.index)),
  ]);
}
