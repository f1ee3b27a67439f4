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

/**
 * A digest of a cell's ActualLRPs and tasks, as its pass lists them, that changes whenever any of
 * them does: every write of a record moves its modification tag (a new record, or one made
 * again, has a new epoch), and a record that comes or goes changes the set. So a rep that sends
 * back the digest of the lists it holds can be told "unchanged" instead of being sent them again
 * (`CellPassRequest.known_digest`). Independent of order.
 */
export function cellPassDigest(actuals: readonly DigestedActual[], tasks: readonly DigestedTask[]): string {
  const lines = [
    ...actuals.map(
      (a) =>
        `a\u0000${a.process_guid}\u0000${a.index}\u0000${a.evacuating ? 1 : 0}\u0000${a.modification_tag.epoch}\u0000${a.modification_tag.index}`,
    ),
    ...tasks.map(
      (t) => `t\u0000${t.task_guid}\u0000${t.modification_tag.epoch}\u0000${t.modification_tag.index}`,
    ),
  ].sort();
  const hash = createHash('sha256');
  for (const line of lines) hash.update(line).update('\n');
  return hash.digest('base64url');
}
