import { actualLrpKey } from '../bbs/index.js';
import { HttpJsonClient, orAbsent, type QueryValues, runLoop, type ServerUrls } from '../core/index.js';
import type { Executor } from '../executor/index.js';

/** What the server says one unit on this cell sees of its relations (`GET /v1/cells/:id/relations`). */
export interface UnitRelations {
  readonly process_guid: string;
  readonly index: number;
  /** The relations file's content, as JSON. */
  readonly file: unknown;
  /** `BERTH_RELATION_<SERVICE>` variables for a container starting now. */
  readonly env: Readonly<Record<string, string>>;
}

/** Where relation data comes from: the server's `/v1/relations` endpoints. */
export interface RelationSource {
  /** Every system unit with an instance on this cell. */
  forCell(): Promise<readonly UnitRelations[]>;
  /** One instance, even before it runs; undefined when it is no system unit. */
  forInstance(processGuid: string, index: number): Promise<UnitRelations | undefined>;
}

export interface RelationSyncOptions {
  readonly executor: Executor;
  readonly source: RelationSource;
  readonly intervalMs?: number;
  readonly log?: (message: string) => void;
}

/** The file every LRP container of a cell with relation sync finds in its shared dir. */
export const relationsFileName = 'relations.json';

const noRelations = render({ unit: null, relations: [] });

function render(file: unknown): string {
  return `${JSON.stringify(file, null, 2)}\n`;
}

/**
 * The unit agent's relation hooks, reduced to what a container needs: it keeps each LRP
 * container's `relations.json` equal to what the server computes from the model's scopes, so a
 * container sees peers arrive and depart without a restart. A container starts with the latest
 * data this cell has (file and env); the file is then rewritten only when it changes.
 */
export class RelationSync {
  readonly #options: RelationSyncOptions;
  readonly #byInstance = new Map<string, UnitRelations>();
  readonly #written = new Map<string, string>();
  #loop: AbortController | undefined;
  #running: Promise<void> | undefined;

  constructor(options: RelationSyncOptions) {
    this.#options = options;
  }

  start(): void {
    if (this.#loop) return;
    this.#loop = new AbortController();
    const intervalMs = this.#options.intervalMs ?? 2_000;
    // A pass logs its own failures (the server away), so the loop's rounds never fail.
    void runLoop({
      name: 'relation sync',
      signal: this.#loop.signal,
      intervalMs,
      firstRoundInMs: intervalMs,
      fixedRate: true,
      round: () => this.syncOnce(),
    });
  }

  stop(): void {
    this.#loop?.abort();
    this.#loop = undefined;
  }

  /**
   * What a container of (process_guid, index) starts with: its env snapshot and its shared files.
   * Asks the server for the instance; without an answer it starts with what this cell last knew.
   */
  async startSpec(
    processGuid: string,
    index: number,
  ): Promise<{ env: Record<string, string>; files: Record<string, string> }> {
    let known = this.#byInstance.get(actualLrpKey({ process_guid: processGuid, index }));
    try {
      known = (await this.#options.source.forInstance(processGuid, index)) ?? known;
    } catch (err) {
      this.#options.log?.(
        `relation data of ${actualLrpKey({ process_guid: processGuid, index })} unavailable: ${String(err)}`,
      );
    }
    return {
      env: { ...(known?.env ?? {}) },
      files: { [relationsFileName]: known ? render(known.file) : noRelations },
    };
  }

  /** One pass: fetch, then rewrite the files that changed. Overlapping calls share one pass. */
  syncOnce(): Promise<void> {
    this.#running ??= this.#pass().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #pass(): Promise<void> {
    let units: readonly UnitRelations[];
    try {
      units = await this.#options.source.forCell();
    } catch (err) {
      // The server is away: containers keep the last data they had, which is all we know.
      this.#options.log?.(`relation data unavailable: ${String(err)}`);
      return;
    }
    this.#byInstance.clear();
    for (const u of units) this.#byInstance.set(actualLrpKey(u), u);
    const live = new Set<string>();
    for (const c of this.#options.executor.list()) {
      if (c.tags.kind !== 'lrp') continue;
      live.add(c.guid);
      const known = this.#byInstance.get(actualLrpKey(c.tags));
      const content = known ? render(known.file) : noRelations;
      if (this.#written.get(c.guid) === content) continue;
      try {
        if (this.#options.executor.writeSharedFile(c.guid, relationsFileName, content))
          this.#written.set(c.guid, content);
      } catch (err) {
        this.#options.log?.(`relations file of ${c.guid}: ${String(err)}`);
      }
    }
    for (const guid of this.#written.keys()) if (!live.has(guid)) this.#written.delete(guid);
  }
}

/**
 * Reads relation data from a berth server. A server without systems answers 404 for everything,
 * which means no relations at all.
 */
export function serverRelations(serverUrl: ServerUrls, cellId: string, token?: string): RelationSource {
  const http = new HttpJsonClient(serverUrl, { token, timeoutMs: 10_000 });
  const get = <T>(path: string, query?: QueryValues): Promise<T | undefined> =>
    orAbsent(http.request<T>('GET', path, query ? { query } : {}));
  return {
    async forCell() {
      return (await get<{ units: UnitRelations[] }>('/v1/relations', { cell_id: cellId }))?.units ?? [];
    },
    forInstance(processGuid, index) {
      return get<UnitRelations>(`/v1/relations/${encodeURIComponent(processGuid)}/${index}`);
    },
  };
}
