import type { ActualLRPRef } from './bbs-store.js';

/**
 * The one spelling of an ActualLRP instance's key, `process_guid/index`: what error messages and
 * error details (`id`) name, and what in-memory maps of the bbs layer are keyed by.
 */
export function actualLrpKey(ref: ActualLRPRef): string {
  return `${ref.process_guid}/${ref.index}`;
}
