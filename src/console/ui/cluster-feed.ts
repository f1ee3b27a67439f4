import { useEffect, useState } from 'preact/hooks';
import { ClusterView } from '../model/cluster-view.js';
import { type ConsoleEvent, isBbsEvent, isSystemChange } from '../model/event-facts.js';
import { SseParser } from '../model/sse-parser.js';
import { authGate } from './auth-gate.js';
import { authHeaders, readSnapshot, SignInNeeded, signInNeeded } from './console-api.js';

export type FeedStatus =
  | { readonly kind: 'connecting' }
  | { readonly kind: 'live' }
  | { readonly kind: 'retrying'; readonly reason: string }
  | { readonly kind: 'sign-in'; readonly reason: string };

/** The last events seen, newest first, for the events view. */
const keptEvents = 500;

/**
 * The console's one live copy of the cluster, shared by every view: it opens the BBS event stream
 * from now on, then reads the lists, then applies each event as it arrives (ClusterView's tags
 * reconcile the overlap). On a broken stream it resumes with Last-Event-ID; on a failed resume
 * (the cursor pruned, another server) it starts over. Cells come and go as events too; systems
 * live in the model, whose writes put a `system_changed` event on the same stream, counted here so
 * a system's page reads it again. Nothing is polled: the server ends the stream of a token that
 * was revoked or expired, and the reconnect's 401 opens the sign-in.
 */
export class ClusterFeed {
  readonly view = new ClusterView();
  readonly events: ConsoleEvent[] = [];
  status: FeedStatus = { kind: 'connecting' };
  #listeners = new Set<() => void>();
  #abort: AbortController | undefined;
  #scheduled = false;
  /** system_changed events seen, in all and per system: what a system's view re-reads on. */
  modelVersion = 0;
  readonly #systemVersions = new Map<string, number>();

  start(): void {
    if (this.#abort) return;
    this.#abort = new AbortController();
    void this.#run(this.#abort.signal);
  }

  stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
  }

  /** Start again after a sign-in: the old stream was refused. */
  restart(): void {
    this.stop();
    this.status = { kind: 'connecting' };
    this.#notify();
    this.start();
  }

  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Coalesces a burst of events into one render per animation frame. */
  #notify(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    requestAnimationFrame(() => {
      this.#scheduled = false;
      for (const listener of this.#listeners) listener();
    });
  }

  /** Bumped by each `system_changed` event of `name` (0 before any). */
  systemVersion(name: string): number {
    return this.#systemVersions.get(name) ?? 0;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let lastId: string | undefined;
    let delayMs = 500;
    while (!signal.aborted) {
      try {
        const response = await fetch(`/v1/events${lastId ? '' : '?after=now'}`, {
          headers: { ...authHeaders(), ...(lastId ? { 'last-event-id': lastId } : {}) },
          signal,
        });
        if (response.status === 401) throw signInNeeded();
        if (response.status === 400 && lastId) {
          lastId = undefined; // the cursor is gone (pruned): list again from now
          continue;
        }
        if (!response.ok || !response.body) throw new Error(`event stream: HTTP ${response.status}`);
        if (!lastId) this.view.load(await readSnapshot(signal));
        this.status = { kind: 'live' };
        delayMs = 500;
        this.#notify();
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        const parser = new SseParser();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          for (const message of parser.feed(value)) {
            if (message.id !== null) lastId = message.id;
            const event = JSON.parse(message.data) as ConsoleEvent;
            this.events.unshift(event);
            if (this.events.length > keptEvents) this.events.length = keptEvents;
            this.#notify();
            if (isSystemChange(event)) {
              this.modelVersion++;
              this.#systemVersions.set(event.system, this.systemVersion(event.system) + 1);
            } else if (isBbsEvent(event)) this.view.apply(event);
          }
        }
        throw new Error('the event stream ended');
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof SignInNeeded) {
          authGate.require(err.message);
          this.status = { kind: 'sign-in', reason: err.message };
          this.#notify();
          return;
        }
        this.status = { kind: 'retrying', reason: err instanceof Error ? err.message : String(err) };
        this.#notify();
        await new Promise((resolve) => setTimeout(resolve, delayMs));
        delayMs = Math.min(delayMs * 2, 10_000);
      }
    }
  }
}

export const clusterFeed = new ClusterFeed();

/** Re-renders the calling view whenever the feed changed (at most once a frame). */
export function useClusterFeed(): ClusterFeed {
  const [, setTick] = useState(0);
  useEffect(() => clusterFeed.subscribe(() => setTick((n) => n + 1)), []);
  return clusterFeed;
}
