import { bbsPublicOperations as ops } from '../bbs/index.js';
import { InvalidArgumentError } from '../core/index.js';
import { booleanOption, type CommandHandler, formatOption, stringOption } from './command.js';
import { listAll, serverClient } from './server-client.js';
import { renderTable } from './table-output.js';

const list: CommandHandler = {
  name: 'lrp list',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const domain = stringOption(ctx.values, 'domain');
    const query = domain !== undefined ? { domain } : {};
    const client = serverClient(ctx);
    const [desired, actuals] = await Promise.all([
      listAll(client, ops.listDesiredLrps, 'desired_lrps', query),
      listAll(client, ops.listActualLrps, 'actual_lrps', query),
    ]);
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(desired, null, 2)}\n`);
      return 0;
    }
    const running = new Map<string, number>();
    for (const a of actuals) {
      if (a.state === 'RUNNING' && !a.evacuating)
        running.set(a.process_guid, (running.get(a.process_guid) ?? 0) + 1);
    }
    ctx.stdout.write(
      renderTable(
        ['PROCESS_GUID', 'DOMAIN', 'INSTANCES', 'RUNNING', 'MEMORY_MB', 'IMAGE'],
        desired.map((d) => [
          d.process_guid,
          d.domain,
          String(d.instances),
          String(running.get(d.process_guid) ?? 0),
          String(d.memory_mb),
          d.image,
        ]),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

const get: CommandHandler = {
  name: 'lrp get',
  async run(ctx) {
    const format = formatOption(ctx, ['text', 'json']);
    const guid = ctx.positionals[0] ?? '';
    const client = serverClient(ctx);
    const desired = await client.call(ops.getDesiredLrp, { params: { process_guid: guid } });
    const actuals = (await listAll(client, ops.listActualLrps, 'actual_lrps', { process_guid: guid })).sort(
      (a, b) => a.index - b.index || Number(a.evacuating) - Number(b.evacuating),
    );
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify({ desired_lrp: desired, actual_lrps: actuals }, null, 2)}\n`);
      return 0;
    }
    const lines = [
      `process_guid=${desired.process_guid}`,
      `domain=${desired.domain}`,
      `instances=${desired.instances}`,
      `image=${desired.image}`,
      `command=${(desired.command ?? []).join(' ')}`,
      `memory_mb=${desired.memory_mb}`,
      `disk_mb=${desired.disk_mb}`,
      `ports=${desired.ports.join(',')}`,
    ];
    ctx.stdout.write(`${lines.join('\n')}\n\n`);
    ctx.stdout.write(
      renderTable(
        ['INDEX', 'STATE', 'CELL', 'ADDRESS', 'PORTS', 'CRASHES', 'SINCE', 'NOTE'],
        actuals.map((a) => [
          String(a.index),
          a.state,
          a.cell_id,
          a.address,
          a.ports.map((p) => `${p.host_port}->${p.container_port}`).join(','),
          String(a.crash_count),
          a.since,
          [a.evacuating ? 'evacuating' : '', a.placement_error, a.crash_reason].filter(Boolean).join('; '),
        ]),
      ),
    );
    return 0;
  },
};

const scale: CommandHandler = {
  name: 'lrp scale',
  async run(ctx) {
    const [guid = '', count = ''] = ctx.positionals;
    if (!/^\d+$/.test(count)) {
      throw new InvalidArgumentError(`Invalid instance count "${count}": expected a whole number`, {
        field: 'instances',
      });
    }
    const desired = await serverClient(ctx).call(ops.updateDesiredLrp, {
      params: { process_guid: guid },
      body: { instances: Number(count) },
    });
    ctx.stdout.write(`${desired.process_guid} instances=${desired.instances}\n`);
    return 0;
  },
};

const rm: CommandHandler = {
  name: 'lrp rm',
  async run(ctx) {
    const guid = ctx.positionals[0] ?? '';
    await serverClient(ctx).call(ops.removeDesiredLrp, { params: { process_guid: guid } });
    ctx.stdout.write(`${guid}\n`);
    return 0;
  },
};

const cells: CommandHandler = {
  name: 'cells',
  async run(ctx) {
    const format = formatOption(ctx, ['table', 'json']);
    const presences = await listAll(serverClient(ctx), ops.listCells, 'cells');
    if (format === 'json') {
      ctx.stdout.write(`${JSON.stringify(presences, null, 2)}\n`);
      return 0;
    }
    ctx.stdout.write(
      renderTable(
        ['CELL_ID', 'ZONE', 'MEMORY_MB', 'DISK_MB', 'CONTAINERS', 'REP_URL', 'TAGS', 'EXPIRES_AT'],
        presences.map((c) => [
          c.cell_id,
          c.zone,
          String(c.capacity.memory_mb),
          String(c.capacity.disk_mb),
          String(c.capacity.containers),
          c.rep_url,
          c.placement_tags.join(','),
          c.expires_at,
        ]),
        !booleanOption(ctx.values, 'no-legend'),
      ),
    );
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [list, get, scale, rm, cells];
