import { type StringOptions, Type } from '@sinclair/typebox';
import { limits } from './limits.js';
import { defaultPageSize, maxPageSize } from './list-page.js';

/**
 * TypeBox building blocks that carry their bound (src/core/limits.ts), so every schema of the API
 * says how much it accepts and a request past it is a 400 naming the field and the bound. What no
 * JSON schema can say (no U+0000 or unpaired surrogate in any string, nesting depth) is checked
 * once for every request in src/api/request-guards.ts.
 */

/** A required identifier: guid, domain, cell id, lease name, zone… */
export const Name = (options: StringOptions = {}) =>
  Type.String({ minLength: 1, maxLength: limits.maxNameLength, ...options });

/** An identifier that may be empty (filters, optional zone). */
export const NameOrEmpty = (options: StringOptions = {}) =>
  Type.String({ maxLength: limits.maxNameLength, ...options });

/** Free text: reasons, messages, results. */
export const Message = (options: StringOptions = {}) =>
  Type.String({ maxLength: limits.maxMessageLength, ...options });

export const Url = (options: StringOptions = {}) =>
  Type.String({ maxLength: limits.maxUrlLength, ...options });

export const ImageRef = (options: StringOptions = {}) =>
  Type.String({ minLength: 1, maxLength: limits.maxImageLength, ...options });

export const ArgString = (options: StringOptions = {}) =>
  Type.String({ maxLength: limits.maxArgLength, ...options });

export const Argv = (item = ArgString(), options: { minItems?: number; description?: string } = {}) =>
  Type.Array(item, { maxItems: limits.maxArgs, ...options });

export const EnvMap = () =>
  Type.Record(Type.String(), ArgString(), {
    maxProperties: limits.maxEnvVars,
    propertyNames: { maxLength: limits.maxNameLength },
  });

export const PlacementTags = () => Type.Array(Name(), { maxItems: limits.maxPlacementTags });

export const MemoryMb = (minimum = 0) => Type.Integer({ minimum, maximum: limits.maxMemoryMb });
export const DiskMb = (minimum = 0) => Type.Integer({ minimum, maximum: limits.maxDiskMb });
export const Instances = () => Type.Integer({ minimum: 0, maximum: limits.maxInstances });
/** An instance index: below the largest instance count. */
export const InstanceIndex = () => Type.Integer({ minimum: 0, maximum: limits.maxInstances - 1 });
export const DurationMs = (minimum = 0) => Type.Integer({ minimum, maximum: limits.maxDurationMs });
/** A counter stored in a 32-bit column (crash counts, tag indexes, sizes). */
export const Int32 = (minimum = 0) => Type.Integer({ minimum, maximum: limits.maxInt32 });
export const ExitCode = () => Type.Integer({ minimum: limits.minInt32, maximum: limits.maxInt32 });

/**
 * Routes, as in Diego: a map from a route provider's key to its opaque JSON. Values are any JSON;
 * their depth is bounded for every body, and their serialized size by the store (maxRoutesBytes).
 */
export const Routes = () =>
  Type.Union(
    [
      Type.Record(Type.String(), Type.Unknown(), {
        maxProperties: limits.maxRouteKeys,
        propertyNames: { maxLength: limits.maxNameLength },
      }),
      // The plain array of HTTP routes (issue 22), stored as `{ "http": [...] }`. Hostnames and
      // ports are checked by the store, which names the entry's field (bbs/http-routes.ts).
      Type.Array(
        Type.Object(
          {
            hostname: Type.String({ maxLength: 253 }),
            port: Type.Integer({ minimum: 1, maximum: 65535 }),
            path: Type.Optional(Type.String({ maxLength: 1024 })),
          },
          { additionalProperties: false },
        ),
        { maxItems: limits.maxRouteKeys },
      ),
    ],
    {
      description:
        'Routes: [{hostname, port, path?}] (HTTP routes to container ports), or the map by route kind as stored ({"http": [...]})',
    },
  );

/**
 * `limit` + `cursor` of every list route (docs/bbs.md, Paging), as strings with their bounds:
 * `parsePageLimit` and `decodeCursor` (list-page.ts) read them and name what is wrong.
 */
export const PageQueryFields = {
  limit: Type.Optional(
    Type.String({
      maxLength: 16,
      description: `page size, 1 to ${maxPageSize} (default ${defaultPageSize})`,
    }),
  ),
  cursor: Type.Optional(Type.String({ maxLength: 1024, description: 'next_cursor of the previous page' })),
};

/** The query of a list route with nothing to filter by (cells, domains, systems, tokens): the page. */
export const PageQuery = Type.Object(PageQueryFields, { additionalProperties: false });
