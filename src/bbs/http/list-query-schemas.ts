import { Type } from '@sinclair/typebox';
import { NameOrEmpty, PageQueryFields } from '../../core/index.js';

/**
 * The query schemas of the BBS's public list routes. The routes validate with them and the op
 * table (public-operations.ts) takes its query types from them (`QueryOf`), so a filter added to
 * a route is a filter its clients can send, and one the route drops fails to compile at the caller.
 */
const strict = { additionalProperties: false } as const;

export const DesiredLrpListQuery = Type.Object(
  { domain: Type.Optional(NameOrEmpty()), ...PageQueryFields },
  strict,
);

export const ActualLrpListQuery = Type.Object(
  {
    process_guid: Type.Optional(Type.String()),
    domain: Type.Optional(Type.String()),
    cell_id: Type.Optional(Type.String()),
    ...PageQueryFields,
  },
  strict,
);

export const TaskListQuery = Type.Object(
  {
    domain: Type.Optional(NameOrEmpty()),
    cell_id: Type.Optional(NameOrEmpty()),
    state: Type.Optional(
      Type.Union(['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'].map((s) => Type.Literal(s))),
    ),
    ...PageQueryFields,
  },
  strict,
);
