import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { decodeCursor, isString, Name, parsePageLimit, toPage } from '../../core/index.js';
import type { ActualLRPPageKey } from '../bbs-store.js';
import { defaultWorkMemoryMb, type Monitor } from '../bbs-types.js';
import { asPrecondition, etag, IfMatch, ifMatch, stripUndefined } from './bbs-route-support.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';
import { DesiredLRPDefinitionSchema, DesiredLRPUpdateSchema, type MonitorSchema } from './bbs-schemas.js';
import { ActualLrpListQuery, DesiredLrpListQuery } from './list-query-schemas.js';
import { bbsPublicOperations } from './public-operations.js';
import { refuseSystemOwned } from './system-ownership.js';
import { lrpContainersFrom, noteUserWrite } from './user-writes.js';

/** DesiredLRPs (create, list, read, update with If-Match, remove) and the ActualLRP list. */
export function registerLrpRoutes(root: FastifyInstance, options: BbsRoutesOptions): void {
  const app = root.withTypeProvider<TypeBoxTypeProvider>();
  const { store } = options;
  // ---- DesiredLRPs

  app.post(
    bbsPublicOperations.desireLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Desire an LRP: creates its UNCLAIMED ActualLRPs and start requests',
        body: DesiredLRPDefinitionSchema,
      },
    },
    async (request, reply) => {
      const b = request.body;
      await refuseSystemOwned(store, 'desire-lrp', { domain: b.domain });
      const desired = await store.desireLRP({
        process_guid: b.process_guid,
        domain: b.domain,
        instances: b.instances,
        image: b.image,
        ...(b.command !== undefined ? { command: b.command } : {}),
        env: b.env ?? {},
        memory_mb: b.memory_mb ?? defaultWorkMemoryMb,
        disk_mb: b.disk_mb ?? 0,
        ports: b.ports ?? [],
        routes: b.routes ?? {},
        annotation: b.annotation ?? '',
        ...(b.monitor !== undefined ? { monitor: withMonitorDefaults(b.monitor) } : {}),
        start_timeout_s: b.start_timeout_s ?? 60,
        placement_tags: b.placement_tags ?? [],
        ...(b.volumes !== undefined ? { volumes: b.volumes } : {}),
        ...(b.sidecars !== undefined ? { sidecars: b.sidecars } : {}),
      });
      return reply.code(201).header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.get(
    bbsPublicOperations.listDesiredLrps.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'DesiredLRPs by process_guid, a page at a time: { desired_lrps, next_cursor? }',
        querystring: DesiredLrpListQuery,
      },
    },
    async (request) => {
      const { domain, limit: rawLimit, cursor } = request.query;
      const limit = parsePageLimit(rawLimit);
      const after = decodeCursor(cursor, isString);
      const rows = await store.listDesiredLRPs({
        ...(domain !== undefined ? { domain } : {}),
        limit: limit + 1,
        ...(after !== undefined ? { after } : {}),
      });
      return toPage('desired_lrps', rows, limit, (d) => d.process_guid);
    },
  );

  const ProcessGuidParams = Type.Object({ process_guid: Name() });

  app.get(
    bbsPublicOperations.getDesiredLrp.path,
    { schema: { tags: ['desired_lrps'], params: ProcessGuidParams } },
    async (request, reply) => {
      const desired = await store.getDesiredLRP({ process_guid: request.params.process_guid });
      return reply.header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.patch(
    bbsPublicOperations.updateDesiredLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Update instances, routes or annotation; If-Match: <ETag> makes it a CAS (412 when stale)',
        params: ProcessGuidParams,
        headers: IfMatch,
        body: DesiredLRPUpdateSchema,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      const update = stripUndefined(request.body);
      const guid = request.params.process_guid;
      await refuseSystemOwned(store, 'update-lrp', { process_guid: guid });
      // Read before the write: a scale down retires the instances it stops.
      const stopped =
        options.onUserWrite && update.instances !== undefined
          ? await lrpContainersFrom(store, guid, update.instances)
          : [];
      const desired = await asPrecondition(() =>
        store.updateDesiredLRP({ process_guid: guid, ...(expected ? { expected } : {}), update }),
      );
      await noteUserWrite(options.onUserWrite, request, {
        status: 'stop',
        containers: stopped,
        message: `LRP ${guid} scaled to ${desired.instances} instances`,
      });
      return reply.header('etag', etag(desired.modification_tag)).send(desired);
    },
  );

  app.delete(
    bbsPublicOperations.removeDesiredLrp.path,
    {
      schema: {
        tags: ['desired_lrps'],
        summary: 'Remove a DesiredLRP and retire all its ActualLRPs',
        params: ProcessGuidParams,
        headers: IfMatch,
      },
    },
    async (request, reply) => {
      const expected = ifMatch(request.headers['if-match']);
      const guid = request.params.process_guid;
      await refuseSystemOwned(store, 'remove-lrp', { process_guid: guid });
      const stopped = options.onUserWrite ? await lrpContainersFrom(store, guid, 0) : [];
      await asPrecondition(() =>
        store.removeDesiredLRP({ process_guid: guid, ...(expected ? { expected } : {}) }),
      );
      await noteUserWrite(options.onUserWrite, request, {
        status: 'stop',
        containers: stopped,
        message: `LRP ${guid} removed`,
      });
      return reply.code(204).send();
    },
  );

  app.get(
    bbsPublicOperations.listActualLrps.path,
    {
      schema: {
        tags: ['actual_lrps'],
        summary:
          'ActualLRPs, evacuating copies included (evacuating: true), a page at a time: { actual_lrps, next_cursor? }',
        querystring: ActualLrpListQuery,
      },
    },
    async (request) => {
      const { limit: rawLimit, cursor, ...filter } = stripUndefined(request.query);
      const limit = parsePageLimit(rawLimit);
      const after = decodeCursor(cursor, isActualLRPPageKey);
      const rows = await store.listActualLRPs({
        ...filter,
        limit: limit + 1,
        ...(after !== undefined ? { after } : {}),
      });
      return toPage('actual_lrps', rows, limit, (a) => ({
        process_guid: a.process_guid,
        index: a.index,
        evacuating: a.evacuating === true,
      }));
    },
  );
}

function isActualLRPPageKey(value: unknown): value is ActualLRPPageKey {
  const key = value as Partial<ActualLRPPageKey> | null;
  return (
    typeof key === 'object' &&
    key !== null &&
    isString(key.process_guid) &&
    Number.isSafeInteger(key.index) &&
    (key.index ?? -1) >= 0 &&
    typeof key.evacuating === 'boolean'
  );
}

/** The store applies the defaults and bounds (definition-defaults.ts); this only types the body. */
function withMonitorDefaults(monitor: Static<typeof MonitorSchema>): Monitor {
  if ('http' in monitor)
    return { ...monitor, http: { port: monitor.http.port, path: monitor.http.path ?? '/' } };
  return monitor;
}
