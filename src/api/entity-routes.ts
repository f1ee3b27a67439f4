import type {} from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { Instances, Name } from '../core/index.js';
import { type EntityRequest, entityOperations as ops, type SystemDeployer } from '../model/index.js';
import { userOf } from './auth/auth-hook.js';
import { ActionSchema } from './system-routes.js';

const ServicePath = () => Name({ description: 'A service path inside the system, like /web/api' });
const Force = Type.Optional(
  Type.Boolean({ description: 'Do the agents’ part in the server instead of waiting for them (seed 003)' }),
);
const SystemParams = Type.Object({ name: Name() });
const RelationBody = Type.Object({ a: ServicePath(), b: ServicePath() }, { additionalProperties: false });

/**
 * Seed 003's per-entity commands: each is accepted as an action (202, followed at
 * `GET /v1/deploys/{id}`) under the intention locks of the paths it changes, or refused at once:
 * 409 when a rule of the model refuses it or a running action holds a conflicting lock (naming it),
 * 404 for what does not exist. The token's user is recorded as the one who asked.
 */
export function entityRoutes(deployer: SystemDeployer): (app: FastifyInstance) => Promise<void> {
  return async (root) => {
    const app = root.withTypeProvider<TypeBoxTypeProvider>();
    const accepted = { 202: ActionSchema };
    const accept = async (system: string, request: EntityRequest, user: string) => {
      const action = await deployer.entities.request(system, request, user);
      return { ...action, log: [...action.log] };
    };

    app.post(
      ops.destroyUnit.path,
      {
        schema: {
          tags: ['systems'],
          summary:
            'Destroy a unit (one instance index of a service): Dying, its agent departs its relations and sets it Dead; the service then replaces it',
          params: SystemParams,
          body: Type.Object(
            { path: ServicePath(), index: Type.Integer({ minimum: 0, maximum: 1_000_000 }), force: Force },
            { additionalProperties: false },
          ),
          response: accepted,
        },
      },
      async (request, reply) => {
        reply.code(202);
        return accept(
          request.params.name,
          {
            kind: 'unit-destroy',
            path: request.body.path,
            index: request.body.index,
            force: request.body.force === true,
          },
          userOf(request),
        );
      },
    );

    app.post(
      ops.scaleService.path,
      {
        schema: {
          tags: ['systems'],
          summary: "Scale a service: its stored definition, its units and its DesiredLRP's instances",
          params: SystemParams,
          body: Type.Object({ path: ServicePath(), instances: Instances() }, { additionalProperties: false }),
          response: accepted,
        },
      },
      async (request, reply) => {
        reply.code(202);
        return accept(
          request.params.name,
          { kind: 'service-scale', path: request.body.path, instances: request.body.instances },
          userOf(request),
        );
      },
    );

    app.post(
      ops.destroyService.path,
      {
        schema: {
          tags: ['systems'],
          summary:
            'Destroy a service: its units and relations go Dying, its instances stop, it is removed when the last goes',
          params: SystemParams,
          body: Type.Object({ path: ServicePath(), force: Force }, { additionalProperties: false }),
          response: accepted,
        },
      },
      async (request, reply) => {
        reply.code(202);
        return accept(
          request.params.name,
          { kind: 'service-destroy', path: request.body.path, force: request.body.force === true },
          userOf(request),
        );
      },
    );

    const relationRoutes = [
      {
        path: ops.addRelation.path,
        kind: 'relation-add',
        summary:
          'Relate two services of a system (global scope): their placed units enter it through their agents',
      },
      {
        path: ops.removeRelation.path,
        kind: 'relation-remove',
        summary: 'Remove a relation: Dying until the units in its scope have departed, then removed',
      },
    ] as const;
    for (const route of relationRoutes) {
      app.post(
        route.path,
        {
          schema: {
            tags: ['systems'],
            summary: route.summary,
            params: SystemParams,
            body: RelationBody,
            response: accepted,
          },
        },
        async (request, reply) => {
          reply.code(202);
          return accept(request.params.name, { kind: route.kind, ...request.body }, userOf(request));
        },
      );
    }

    app.post(
      ops.destroyCell.path,
      {
        schema: {
          tags: ['systems'],
          summary:
            "Destroy a model cell (Juju's machine): refused while units are on it unless force, which forces them off and does not wait for its agent",
          params: Type.Object({ id: Name() }),
          body: Type.Optional(Type.Object({ force: Force }, { additionalProperties: false })),
          response: accepted,
        },
      },
      async (request, reply) => {
        reply.code(202);
        return accept(
          '',
          { kind: 'cell-destroy', cell: request.params.id, force: request.body?.force === true },
          userOf(request),
        );
      },
    );
  };
}
