import { Type } from '@sinclair/typebox';
import { PageQueryFields } from '../core/index.js';

/** `limit` + `cursor` of a list route (docs/bbs.md, Paging), checked by src/core/list-page.ts. */
export const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });

/** The key small lists of records made over time are paged by: oldest first, ties by id. */
export function createdThenId(record: { created_at: string; id: string }): string {
  return `${record.created_at} ${record.id}`;
}
