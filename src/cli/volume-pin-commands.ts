import { bbsPublicOperations as ops } from '../bbs/index.js';
import { booleanOption, type CommandHandler, formatOption, intOption, stringOption } from './command.js';
import { serverClient } from './server-client.js';
import { renderTable } from './table-output.js';

/**
 * The cluster's named volumes (issue 23): which cell holds each instance's data (`volume pins`),
 * and an operator's release of a pin (`volume unpin`) when that cell is gone for good, accepting
 * that the instance starts elsewhere with fresh volumes.
 */
const pins: CommandHandler = {
  name: 'volume pins',
  async run(ctx) {
    const domain = stringOption(ctx.values, 'domain');
    const cell = stringOption(ctx.values, 'cell');
    const { volume_pins } = await serverClient(ctx).call(ops.listVolumePins, {
      query: {
        ...(domain !== undefined ? { domain } : {}),
        ...(cell !== undefined ? { cell_id: cell } : {}),
      },
    });
    if (formatOption(ctx, ['table', 'json']) === 'json') {
      ctx.stdout.write(`${JSON.stringify(volume_pins, null, 2)}\n`);
      return 0;
    }
    ctx.stdout.write(
      renderTable(
        ['DOMAIN', 'VOLUME', 'INDEX', 'CELL', 'SINCE'],
        volume_pins.map((p) => [p.domain, p.volume, String(p.index), p.cell_id, p.created_at]),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const unpin: CommandHandler = {
  name: 'volume unpin',
  async run(ctx) {
    const domain = ctx.positionals[0] ?? '';
    const volume = stringOption(ctx.values, 'volume');
    const index = intOption(ctx.values, 'index')?.toString();
    const { released } = await serverClient(ctx).call(ops.releaseVolumePins, {
      params: { domain },
      query: { ...(volume !== undefined ? { volume } : {}), ...(index !== undefined ? { index } : {}) },
    });
    ctx.stdout.write(`released ${released} pin(s) of ${domain}\n`);
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [pins, unpin];
