import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { maxAgentActionsPerRequest, type SystemDeployer } from '../model/index.js';

const Name = Type.String({ minLength: 1, maxLength: 512 });
const strict = { additionalProperties: false } as const;

/** `AgentAction` (src/model/agent-rules.ts) as a schema: anything else is a 400 naming the field. */
const AgentActionSchema = Type.Union([
  Type.Object({ kind: Type.Literal('unit-dying'), unit: Name }, strict),
  Type.Object({ kind: Type.Literal('enter-scope'), unit: Name, relation: Name }, strict),
  Type.Object({ kind: Type.Literal('leave-scope'), unit: Name, relation: Name }, strict),
  Type.Object({ kind: Type.Literal('add-sidecar'), unit: Name, service: Name }, strict),
  Type.Object({ kind: Type.Literal('destroy-sidecar'), unit: Name }, strict),
  Type.Object({ kind: Type.Literal('unit-dead'), unit: Name }, strict),
  Type.Object({ kind: Type.Literal('remove-unit'), unit: Name }, strict),
  Type.Object({ kind: Type.Literal('cell-dead'), cell: Name }, strict),
]);

const ResultSchema = Type.Object({
  applied: Type.Boolean(),
  error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String() })),
});

/**
 * Seed 003's unit and machine agents run in each cell's process (`CellAgent`); these are their
 * two calls: the part of the model they act on, and their actions, which the server applies one
 * transaction each after checking that the unit (or cell) belongs to the calling cell.
 */
export function agentRoutes(deployer: SystemDeployer): (app: FastifyInstance) => Promise<void> {
  return async (root) => {
    const app = root.withTypeProvider<TypeBoxTypeProvider>();
    app.get(
      '/v1/agents/cells/:cell_id/model',
      {
        schema: {
          tags: ['systems'],
          summary: "The part of the model a cell's unit and machine agents act on",
          params: Type.Object({ cell_id: Name }),
        },
      },
      async (request) => deployer.cellAgentModel(request.params.cell_id),
    );
    app.post(
      '/v1/agents/cells/:cell_id/actions',
      {
        schema: {
          tags: ['systems'],
          summary: "A cell's agents' actions: each applied in its own transaction, one result each",
          params: Type.Object({ cell_id: Name }),
          body: Type.Object(
            { actions: Type.Array(AgentActionSchema, { maxItems: maxAgentActionsPerRequest }) },
            strict,
          ),
          response: { 200: Type.Object({ results: Type.Array(ResultSchema) }) },
        },
      },
      async (request) => ({
        results: await deployer.applyCellAgentActions(request.params.cell_id, request.body.actions),
      }),
    );
  };
}
