import type { ActualLRP } from '../bbs/index.js';
import { sidecarUnitIndex } from './instance-names.js';
import type { ServiceDefinition } from './system-definition.js';

/**
 * The unit index an ActualLRP stands for in a sidecar service: its units' own LRPs
 * (`<guid>.uN`), or, for a sidecar in its principal's pod (`colocate: pod`), the principal's
 * current instances, whose pods run it.
 */
export function sidecarInstanceIndex(
  row: { readonly process_guid: string; readonly spec: Pick<ServiceDefinition, 'colocate'> },
  principal: { readonly kind: string; readonly process_guid: string } | undefined,
  actual: Pick<ActualLRP, 'process_guid' | 'index'>,
): number | undefined {
  if (row.spec.colocate === 'pod')
    return principal?.kind === 'service' && actual.process_guid === principal.process_guid
      ? actual.index
      : undefined;
  return sidecarUnitIndex(row.process_guid, actual.process_guid);
}
