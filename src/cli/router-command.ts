import { BbsClient } from '../bbs/index.js';
import { parseBalance, startRouter } from '../router/index.js';
import { type CommandHandler, stringOption, untilStopSignal } from './command.js';
import { resolveServerTarget } from './server-target.js';

/**
 * `berth router`: the route table from a server's BBS events and the HTTP proxy in front of the
 * instances, as its own process (routers scale apart from servers). A viewer token is enough;
 * `--bbs` takes several servers of one database, as cells and the CLI do.
 */
const router: CommandHandler = {
  name: 'router',
  async run(ctx) {
    // Several servers (`--bbs A,B`): the client moves to the next when one stops answering, and
    // the event stream resumes there after its last event, so the route table never starts over.
    const { urls, token } = resolveServerTarget(ctx.values, { urlFlag: 'bbs' });
    const running = await startRouter({
      source: new BbsClient(urls, token ? { token } : {}),
      listen: stringOption(ctx.values, 'listen') ?? '127.0.0.1:8890',
      balance: parseBalance(stringOption(ctx.values, 'balance')),
      logger: {
        info: (_fields, message) => ctx.stderr.write(`${message}\n`),
        warn: (fields, message) => ctx.stderr.write(`${message}: ${String(fields.error ?? '')}\n`),
      },
    });
    // The first line on stdout is the URL, so scripts (and tests) using port 0 can find it.
    ctx.stdout.write(`${running.url}\n`);
    await untilStopSignal();
    await running.close();
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [router];
