import { Type } from '@sinclair/typebox';
import { defaultPageSize, maxPageSize } from '../core/index.js';

/** `limit` + `cursor` of a list route (docs/bbs.md, Paging), checked by src/core/list-page.ts. */
export const PageQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.String({ description: `page size, 1 to ${maxPageSize} (default ${defaultPageSize})` }),
    ),
    cursor: Type.Optional(Type.String({ description: 'next_cursor of the previous page' })),
  },
  { additionalProperties: false },
);

/** The key small lists of records made over time are paged by: oldest first, ties by id. */
export function createdThenId(record: { created_at: string; id: string }): string {
  return `${record.created_at} ${record.id}`;
}
