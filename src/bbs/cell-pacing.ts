/**
 * How often cells may heartbeat and run their safety-net pass, as the server grants it. Every
 * request costs the server about a millisecond of CPU whatever it carries (HTTP and the
 * framework; measured in docs/performance.md), so an idle cluster's load grows with its cells
 * unless each cell asks less often as there are more of them. Nomad's servers do the same with
 * `max_heartbeats_per_second` (default 50): a client's heartbeat TTL grows with the cluster so
 * the server's heartbeat rate stays bounded, and failure detection slows in proportion.
 */
export interface CellPacingLimits {
  /** Heartbeats per second the server takes from all cells together. */
  readonly maxHeartbeatsPerSecond: number;
  /** Safety-net passes (stop requests, records, tasks) per second from all cells together. */
  readonly maxCellPassesPerSecond: number;
}

export const defaultCellPacing: CellPacingLimits = {
  maxHeartbeatsPerSecond: 50,
  maxCellPassesPerSecond: 20,
};

/** What a heartbeat's answer grants its cell. */
export interface CellPacing {
  /** The presence's TTL: what the cell asked for, or longer when that asked too many heartbeats. */
  readonly ttl_ms: number;
  /** The shortest pause the cell's safety-net pass may take between rounds (0: none). */
  readonly min_poll_interval_ms: number;
}

/** Heartbeats a cell sends per TTL (the rep's interval is a third of it: two may be lost). */
export const heartbeatsPerTtl = 3;

/**
 * The pacing for `liveCells` cells (this one included) that each asked for `requestedTtlMs`: a
 * TTL long enough that their heartbeats, `heartbeatsPerTtl` each per TTL, stay within the limit,
 * and a pass interval long enough that their passes do. Pure; the store counts the cells.
 */
export function cellPacing(liveCells: number, requestedTtlMs: number, limits: CellPacingLimits): CellPacing {
  const cells = Math.max(1, liveCells);
  const ttlFloorMs = Math.ceil((heartbeatsPerTtl * cells * 1000) / limits.maxHeartbeatsPerSecond);
  return {
    ttl_ms: Math.max(requestedTtlMs, ttlFloorMs),
    min_poll_interval_ms: Math.ceil((cells * 1000) / limits.maxCellPassesPerSecond),
  };
}
