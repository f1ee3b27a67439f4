import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { WebSocketServer } from 'ws';
import type { BbsStore, CellPresence } from '../bbs/index.js';
import {
  Argv,
  BerthError,
  checkTerminalSize,
  execChannel,
  InstanceIndex,
  InvalidArgumentError,
  isBerthError,
  Name,
  parseExecFrame,
} from '../core/index.js';
import { type HistoryStore, recordUserAction } from '../history/index.js';
import { type ExecSpec, openRepExec } from '../rep/index.js';
import { userOf } from './auth/auth-hook.js';
import {
  type AppRef,
  appProcessGuids,
  cellsById,
  instanceTargets,
  missingRef,
  refExists,
} from './instance-targets.js';

/** A ticket lives this long between `POST /v1/exec` and the WebSocket that uses it. */
const ticketTtlMs = 30_000;

interface ExecBody {
  readonly app?: string;
  readonly index?: number;
  readonly task?: string;
  readonly command: string[];
  readonly tty?: boolean;
  readonly stdin?: boolean;
  readonly cols?: number;
  readonly rows?: number;
}

interface Ticket {
  readonly cell: CellPresence;
  readonly spec: ExecSpec;
  readonly expires: number;
  readonly user: string;
  readonly source: string;
}

export interface ExecRoutesOptions {
  readonly store: BbsStore;
  readonly history?: { readonly history: HistoryStore; readonly now?: (() => Date) | undefined } | undefined;
  readonly now?: () => number;
}

/**
 * The instance an exec names, running now: 404 when the app, task or index does not exist, 409
 * with its state when it exists but does not run (crashed, still starting, a task finished).
 */
async function execTarget(store: BbsStore, ref: AppRef, index: number | undefined) {
  if (!(await refExists(store, ref))) throw missingRef(ref);
  const name = 'task' in ref ? ref.task : `${ref.app}/${index ?? 0}`;
  const all = await instanceTargets(store, ref, 'task' in ref ? { finished: true } : { index: index ?? 0 });
  if ('app' in ref && all.length === 0) {
    let lrp: { readonly state: string } | undefined;
    for (const { guid } of await appProcessGuids(store, ref.app))
      lrp ??= (await store.listActualLRPs({ process_guid: guid })).find((l) => l.index === (index ?? 0));
    if (!lrp)
      throw new BerthError('not_found', `Cannot find instance ${name}`, { kind: 'instance', id: name });
    throw new BerthError('conflict', `Cannot exec into ${name}: it is ${lrp.state}, not RUNNING`, {
      state: lrp.state,
    });
  }
  const running = all.find((t) => t.state === 'RUNNING');
  if (!running) {
    const state =
      all[0]?.state ??
      (await store.getTask({ task_guid: name }).then(
        (t) => t.state,
        () => 'gone',
      ));
    throw new BerthError('conflict', `Cannot exec into ${name}: it is ${state}, not RUNNING`, { state });
  }
  const cell = (await cellsById(store)).get(running.cell_id);
  if (!cell) throw new BerthError('unavailable', `The cell ${running.cell_id} of ${name} is not present`);
  return { target: running, cell };
}

/**
 * `POST /v1/exec` (operators: the default role of a POST) checks the instance, records the exec
 * in its container's history as the caller's user action and answers a one-time ticket; the
 * client then opens the WebSocket `GET /v1/exec/TICKET` (frames: core/exec-channels.ts), which the
 * server relays to the cell's rep. The ticket carries the authority because a WebSocket upgrade
 * does not pass through the API's auth hook (and browsers cannot set its Authorization header).
 */
export function registerExecRoutes(app: FastifyInstance, options: ExecRoutesOptions): void {
  const now = options.now ?? Date.now;
  const tickets = new Map<string, Ticket>();
  const relays = new Set<() => void>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  app.addHook('preClose', async () => {
    for (const end of [...relays]) end();
    wss.close();
  });
  const typed = app.withTypeProvider<TypeBoxTypeProvider>();
  typed.post(
    '/v1/exec',
    {
      schema: {
        tags: ['exec'],
        summary:
          'Start an exec into a running instance or task: answers a ticket for the WebSocket /v1/exec/{ticket}',
        body: Type.Object(
          {
            app: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
            index: Type.Optional(InstanceIndex()),
            task: Type.Optional(Name()),
            command: Argv(),
            tty: Type.Optional(Type.Boolean()),
            stdin: Type.Optional(Type.Boolean()),
            cols: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
            rows: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
          },
          { additionalProperties: false },
        ),
      },
    },
    async (request, reply) => {
      const body = request.body as ExecBody;
      if ((body.app === undefined) === (body.task === undefined))
        throw new InvalidArgumentError('Name exactly one of app or task', {
          field: body.app ? 'task' : 'app',
        });
      if (body.command.length === 0)
        throw new InvalidArgumentError('An exec needs a command', { field: 'command' });
      const ref: AppRef = body.app !== undefined ? { app: body.app } : { task: body.task ?? '' };
      const { target, cell } = await execTarget(options.store, ref, body.index);
      const user = userOf(request);
      if (options.history) {
        await recordUserAction(options.history.history, {
          container_id: target.guid,
          status: 'exec_start',
          user_id: user,
          message: `berth exec by ${user}: ${body.command.join(' ')}`.slice(0, 1000),
          at: (options.history.now ?? (() => new Date()))(),
        });
      }
      for (const [id, t] of tickets) if (t.expires < now()) tickets.delete(id);
      const ticket = randomBytes(32).toString('base64url');
      tickets.set(ticket, {
        cell,
        user,
        source: target.source,
        expires: now() + ticketTtlMs,
        spec: {
          guid: target.guid,
          ...(target.app !== undefined ? { app: target.app } : {}),
          command: body.command,
          tty: body.tty ?? false,
          stdin: body.stdin ?? false,
          size: checkTerminalSize(body.cols, body.rows),
        },
      });
      return reply
        .status(201)
        .send({ ticket, path: `/v1/exec/${ticket}`, instance: target.source, instance_guid: target.guid });
    },
  );

  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!path.startsWith('/v1/exec/')) {
      // Another listener (a proxy in this process) may own it; alone, nobody would answer it.
      if (app.server.listenerCount('upgrade') === 1) socket.destroy();
      return;
    }
    socket.on('error', () => socket.destroy());
    const id = path.slice('/v1/exec/'.length);
    const ticket = tickets.get(id);
    tickets.delete(id);
    if (!ticket || ticket.expires < now())
      return refuse(socket, 401, 'Unknown or expired exec ticket: POST /v1/exec first');
    openRepExec(ticket.cell, ticket.spec).then(
      (rep) =>
        wss.handleUpgrade(req, socket, head, (client) => {
          const end = () => {
            relays.delete(end);
            client.terminate();
            rep.terminate();
          };
          relays.add(end);
          // Frames pass as they are; the exit frame closes the rep's side, and the close is relayed.
          rep.on('message', (data: Buffer) => client.readyState === client.OPEN && client.send(data));
          client.on('message', (data: Buffer) => {
            const frame = parseExecFrame(data);
            if (frame && frame.channel !== execChannel.exit && rep.readyState === rep.OPEN) rep.send(data);
          });
          rep.once('close', (code) => {
            relays.delete(end);
            if (client.readyState === client.OPEN) client.close(code === 1005 ? 1000 : code);
          });
          client.once('close', () => {
            relays.delete(end);
            rep.terminate();
          });
          rep.on('error', end);
          client.on('error', end);
        }),
      (err: unknown) => {
        const status = isBerthError(err)
          ? err.code === 'not_found'
            ? 404
            : err.code === 'conflict'
              ? 409
              : 502
          : 502;
        refuse(socket, status, err instanceof Error ? err.message : String(err));
      },
    );
  });
}

function refuse(socket: Duplex, status: number, message: string): void {
  const body = JSON.stringify({
    code: status === 401 ? 'unauthenticated' : 'unavailable',
    message,
    details: {},
  });
  socket.end(
    `HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
