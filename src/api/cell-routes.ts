import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { type BbsStore, bbsPublicOperations } from '../bbs/index.js';
import { BerthError, NotFoundError } from '../core/index.js';
import { repClientForCell } from '../rep/index.js';

/**
 * What an operator asks of a cell through the server, which alone holds the cells' rep tokens
 * (issue 17): `berth cell drain` used to call the rep directly, which any caller could.
 */
export function cellRoutes(store: BbsStore): (app: FastifyInstance) => Promise<void> {
  return async (root) => {
    const app = root.withTypeProvider<TypeBoxTypeProvider>();
    app.post(
      bbsPublicOperations.evacuateCell.path,
      {
        schema: {
          tags: ['cells'],
          summary: 'Evacuate a cell: it takes no new work, hands its instances over, then exits',
          params: Type.Object({ cell_id: Type.String({ minLength: 1, maxLength: 512 }) }),
        },
      },
      async (request, reply) => {
        const { cell_id } = request.params;
        const cell = (await store.listCells()).find((c) => c.cell_id === cell_id);
        if (!cell) throw new NotFoundError('cell', cell_id);
        // A presence whose rep address is not a URL (the BBS takes any string) names no rep to
        // ask: the cell's state is the problem, not the server (the API fuzz found one).
        if (!URL.canParse(cell.rep_url))
          throw new BerthError(
            'conflict',
            `Cannot evacuate cell ${cell_id}: its rep_url "${cell.rep_url}" is not a URL`,
            {
              cell_id,
            },
          );
        await repClientForCell(cell).evacuate();
        return reply.code(202).send({ cell_id, evacuating: true });
      },
    );
  };
}
