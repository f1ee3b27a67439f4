import type { BbsStore } from '../bbs-store.js';
import { operationBodies } from './bbs-schemas.js';

/** Every operation of the store is one internal route: the request object is the JSON body. */
export type BbsOperationName = Exclude<keyof BbsStore, 'close'>;

/** Diego's BBS style: action-oriented POST routes, one per operation, named in snake_case. */
export const bbsOperationPaths: Readonly<Record<BbsOperationName, string>> = Object.fromEntries(
  (Object.keys(operationBodies) as BbsOperationName[]).map((name) => [
    name,
    `/v1/internal/${name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`).replace(/_l_r_p/g, '_lrp')}`,
  ]),
) as Record<BbsOperationName, string>;

// A store operation without a route (or a route without an operation) fails to compile here.
const everyOperationHasABody: Record<BbsOperationName, unknown> = operationBodies;
void everyOperationHasABody;
