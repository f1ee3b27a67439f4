import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { DurationMs, Name, PageQuery, pageOfWhole } from '../../core/index.js';
import { publicCellPresence } from '../bbs-types.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import { bbsPublicOperations } from './public-operations.js';

/** The small lists of the cluster (cells, domains, leases) and a domain's freshness. */
export function registerClusterRoutes(root: FastifyInstance, options: BbsRoutesOptions): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { store } = options;
  app.get(
    bbsPublicOperations.listCells.path,
    {
      schema: {
        tags: ['cells'],
        summary: 'Live cells: { cells, next_cursor? }',
        querystring: PageQuery,
      },
    },
    async (request) =>
      pageOfWhole(
        'cells',
        (await store.listCells()).map(publicCellPresence),
        request.query,
        (c) => c.cell_id,
      ),
  );
  app.get(
    bbsPublicOperations.listDomains.path,
    {
      schema: {
        tags: ['domains'],
        summary: 'Fresh domains: { domains, next_cursor? }',
        querystring: PageQuery,
      },
    },
    async (request) => pageOfWhole('domains', await store.listDomains(), request.query, (d) => d.domain),
  );
  app.put(
    bbsPublicOperations.upsertDomain.path,
    {
      schema: {
        tags: ['domains'],
        params: Type.Object({ domain: Name() }),
        body: Type.Object({ ttl_ms: DurationMs() }, { additionalProperties: false }),
      },
    },
    async (request) => store.upsertDomain({ domain: request.params.domain, ttl_ms: request.body.ttl_ms }),
  );
  app.get(
    bbsPublicOperations.listVolumePins.path,
    {
      schema: {
        tags: ['volumes'],
        summary: 'The cells holding named volumes, which pin their instances there: { volume_pins }',
        querystring: Type.Object(
          { domain: Type.Optional(Name()), cell_id: Type.Optional(Name()) },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => ({ volume_pins: await store.listVolumePins(request.query) }),
  );
  app.delete(
    bbsPublicOperations.releaseVolumePins.path,
    {
      schema: {
        tags: ['volumes'],
        summary:
          "Releases a domain's pins (one volume, one index): those instances start anywhere, with fresh volumes",
        params: Type.Object({ domain: Name() }),
        querystring: Type.Object(
          {
            volume: Type.Optional(Name()),
            index: Type.Optional(Type.String({ pattern: '^[0-9]{1,6}$', description: 'an instance index' })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request) => {
      const { volume, index } = request.query;
      return store.releaseVolumePins({
        domain: request.params.domain,
        ...(volume !== undefined ? { volume } : {}),
        ...(index !== undefined ? { index: Number(index) } : {}),
      });
    },
  );
  app.get(
    '/v1/leases',
    {
      schema: {
        tags: ['leases'],
        summary: 'Singleton leases and holders: { leases, next_cursor? }',
        querystring: PageQuery,
      },
    },
    async (request) => pageOfWhole('leases', await store.listLeases(), request.query, (l) => l.name),
  );
}
