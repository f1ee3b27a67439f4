/**
 * The tag every cell offers (the rep adds it to its optional placement tags), so work such as a
 * sidecar can be pinned to one cell by a DesiredLRP's `placement_tags`. It lives in the BBS's
 * vocabulary, beside the placement tags it fills, so the model can pin work without loading the rep.
 */
export function cellPlacementTag(cellId: string): string {
  return `cell:${cellId}`;
}
