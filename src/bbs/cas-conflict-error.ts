import { BerthError, limits } from '../core/index.js';
import type { ModificationTag } from './bbs-types.js';

/**
 * A compare-and-set lost: the caller's modification tag is not the record's. `details.current` is
 * the record as it is now, so the caller can decide again without another read (Nomad's
 * modify-index conflict, Diego's ModificationTag mismatch). A missing record is a NotFoundError.
 */
export class CasConflictError extends BerthError {
  readonly current: unknown;

  constructor(kind: string, id: string, expected: ModificationTag | null, current: unknown) {
    super(
      'cas_conflict',
      `Cannot change ${kind} "${id}": it was modified concurrently (expected tag ${formatTag(expected)}, current ${formatTag(tagOf(current))})`,
      { kind, id, expected, current },
    );
    this.name = 'CasConflictError';
    this.current = current;
  }
}

export function formatTag(tag: ModificationTag | null | undefined): string {
  return tag ? `${tag.epoch}:${tag.index}` : 'none';
}

/** Parses `epoch:index` (an ETag, with or without quotes or W/) back into a tag. */
export function parseTag(text: string): ModificationTag | undefined {
  const bare = text
    .trim()
    .replace(/^W\//, '')
    .replace(/^"(.*)"$/, '$1');
  const at = bare.lastIndexOf(':');
  if (at <= 0) return undefined;
  const index = Number(bare.slice(at + 1));
  // Indexes are 32-bit in the store: a larger one is no tag this API gave out.
  if (!Number.isSafeInteger(index) || index < 0 || index > limits.maxInt32) return undefined;
  return { epoch: bare.slice(0, at), index };
}

export function tagsEqual(a: ModificationTag, b: ModificationTag): boolean {
  return a.epoch === b.epoch && a.index === b.index;
}

function tagOf(record: unknown): ModificationTag | null {
  if (typeof record === 'object' && record !== null && 'modification_tag' in record) {
    return (record as { modification_tag: ModificationTag }).modification_tag;
  }
  return null;
}
