import type { ActualLRPRef } from './bbs-store.js';

/**
 * The one spelling of an ActualLRP instance's key, `process_guid/index`: what error messages and
 * error details (`id`) name, and what in-memory maps keyed by instance use in every layer. The
 * index is digits only and comes after the last '/', so two instances never share a key.
 */
export function actualLrpKey(ref: ActualLRPRef): string {
  return `${ref.process_guid}/${ref.index}`;
}
