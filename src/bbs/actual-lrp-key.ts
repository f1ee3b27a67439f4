/**
 * The one spelling of an LRP instance's key (`process_guid` + `index`) as a string, for maps and
 * sets keyed by instance. The index is digits only and comes after the last '#', so two different
 * instances never share a key, whatever their process guids contain.
 */
export function actualLrpKey(ref: { process_guid: string; index: number }): string {
  return `${ref.process_guid}#${ref.index}`;
}
