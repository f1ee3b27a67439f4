import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type BbsStore, type CellCapacity, cellPlacementTag } from '../bbs/index.js';
import type {
  RepLRPWork,
  RepState,
  RepStopRequest,
  RepTaskWork,
  RepWork,
  RepWorkResult,
} from '../rep/index.js';

/**
 * A rep below the rep seam for auctioneer and converger tests: a real HTTP server speaking
 * rep-api.ts, with capacity bookkeeping and no containers. Accepted LRP work is claimed in the
 * BBS (UNCLAIMED → CLAIMED by this cell) and accepted tasks started (PENDING → RUNNING), as a real
 * rep does right after reserving; the real rep has its own tests against the executor.
 */
export interface FakeRepOptions {
  readonly bbs: BbsStore;
  readonly cellId: string;
  readonly zone: string;
  readonly capacity: CellCapacity;
  readonly placementTags?: readonly string[];
}

export interface FakeRepInstance {
  readonly process_guid: string;
  readonly index: number;
  readonly instance_guid: string;
  readonly memory_mb: number;
  readonly disk_mb: number;
}

export class FakeRepServer {
  readonly options: FakeRepOptions;
  readonly instances = new Map<string, FakeRepInstance>();
  readonly tasks = new Map<string, RepTaskWork>();
  readonly stops: RepStopRequest[] = [];
  /** Every `POST /v1/work` body, in order. */
  readonly received: RepWork[] = [];
  /** Work for which this returns true is refused (returned as failed). */
  refuse: (work: RepLRPWork | RepTaskWork) => boolean = () => false;
  /** While true, every request is answered 503 (a cell whose rep is sick). */
  unavailable = false;
  evacuating = false;
  #server: Server | undefined;
  url = '';

  constructor(options: FakeRepOptions) {
    this.options = options;
  }

  async listen(): Promise<string> {
    const server = createServer((req, res) => {
      void this.#handle(req).then(
        ({ status, body }) => {
          res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
          res.end(body === undefined ? undefined : JSON.stringify(body));
        },
        (err: unknown) => {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ code: 'internal', message: String(err) }));
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.#server = server;
    this.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.url;
  }

  /** Registers (or renews) this cell's presence in the BBS. */
  async heartbeat(ttlMs: number): Promise<void> {
    await this.options.bbs.heartbeatCell({
      presence: {
        cell_id: this.options.cellId,
        zone: this.options.zone,
        capacity: this.options.capacity,
        rep_url: this.url,
        placement_tags: this.options.placementTags ?? [],
      },
      ttl_ms: ttlMs,
    });
  }

  async close(): Promise<void> {
    const server = this.#server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  state(): RepState {
    const used = { memory_mb: 0, disk_mb: 0, containers: 0 };
    const lrps: Record<string, number> = {};
    for (const i of this.instances.values()) {
      used.memory_mb += i.memory_mb;
      used.disk_mb += i.disk_mb;
      used.containers++;
      lrps[i.process_guid] = (lrps[i.process_guid] ?? 0) + 1;
    }
    for (const t of this.tasks.values()) {
      used.memory_mb += t.memory_mb;
      used.disk_mb += t.disk_mb;
      used.containers++;
    }
    return {
      cell_id: this.options.cellId,
      zone: this.options.zone,
      capacity: this.options.capacity,
      used,
      lrps,
      evacuating: this.evacuating,
      optional_placement_tags: [cellPlacementTag(this.options.cellId)],
      placement_tags: this.options.placementTags ?? [],
    };
  }

  async #handle(req: IncomingMessage): Promise<{ status: number; body?: unknown }> {
    if (this.unavailable) return { status: 503, body: { code: 'unavailable', message: 'sick' } };
    if (req.method === 'GET' && req.url === '/v1/state') return { status: 200, body: this.state() };
    const text = await readBody(req);
    if (req.method === 'POST' && req.url === '/v1/work') {
      return { status: 200, body: await this.#perform(JSON.parse(text) as RepWork) };
    }
    if (req.method === 'POST' && req.url === '/v1/stop') {
      this.stops.push(JSON.parse(text) as RepStopRequest);
      return { status: 204 };
    }
    if (req.method === 'POST' && req.url === '/v1/evacuate') {
      this.evacuating = true;
      return { status: 202 };
    }
    return { status: 404, body: { code: 'not_found', message: `no route ${req.method} ${req.url}` } };
  }

  async #perform(work: RepWork): Promise<RepWorkResult> {
    this.received.push(work);
    const { bbs, cellId, capacity } = this.options;
    const failed_lrps: RepLRPWork[] = [];
    const failed_tasks: RepTaskWork[] = [];
    const fits = (w: { memory_mb: number; disk_mb: number }): boolean => {
      const used = this.state().used;
      return (
        used.memory_mb + w.memory_mb <= capacity.memory_mb &&
        used.disk_mb + w.disk_mb <= capacity.disk_mb &&
        used.containers + 1 <= capacity.containers
      );
    };
    for (const w of work.lrps) {
      if (this.evacuating || this.refuse(w) || !fits(w)) {
        failed_lrps.push(w);
        continue;
      }
      const instance_guid = randomUUID();
      this.instances.set(`${w.process_guid}/${w.index}`, { ...w, instance_guid });
      try {
        const group = await bbs.getActualLRP({ process_guid: w.process_guid, index: w.index });
        if (group.instance?.state === 'UNCLAIMED') {
          await bbs.claimActualLRP({
            process_guid: w.process_guid,
            index: w.index,
            expected: group.instance.modification_tag,
            instance_key: { instance_guid, cell_id: cellId },
          });
        }
      } catch {
        // Lost the claim: a real rep deletes its container on the next pass; so does this one.
        this.instances.delete(`${w.process_guid}/${w.index}`);
      }
    }
    for (const t of work.tasks) {
      if (this.evacuating || this.refuse(t) || !fits(t)) {
        failed_tasks.push(t);
        continue;
      }
      try {
        const task = await bbs.getTask({ task_guid: t.task_guid });
        await bbs.startTask({ task_guid: t.task_guid, expected: task.modification_tag, cell_id: cellId });
        this.tasks.set(t.task_guid, t);
      } catch {
        // Another cell won PENDING → RUNNING: this one never runs it.
      }
    }
    return { failed_lrps, failed_tasks };
  }
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
