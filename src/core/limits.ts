/**
 * Every upper bound berth puts on what a request may ask for, in one place (issue 17: one request
 * must not take the server down). Each schema that takes a count, a size, a length or a duration
 * uses one of these, and docs/limits.md lists them with the reason for each value. Where Diego or
 * Linux has a limit, berth uses the same number; elsewhere the value is far above real use and far
 * below what would exhaust the machine or overflow a 32-bit PostgreSQL INTEGER column.
 */
export const limits = {
  /** Instances of one DesiredLRP (or one service of a system). CF's own API allows no more in practice. */
  maxInstances: 10_000,
  /** Units of one system, sidecar units included: the deploy writes one model row per unit. */
  maxSystemUnits: 10_000,
  /**
   * A service's or job's path in a system (`/web/api`): its process guid is the system's name, the
   * path and a version, and must fit maxNameLength (63 + 160 + a version and a unit suffix).
   */
  maxTreePathLength: 160,
  /** Services, and jobs, in one system definition. */
  maxSystemEntries: 500,
  /** Memory of one container, MiB (1 TiB). */
  maxMemoryMb: 1_048_576,
  /** Disk of one container, MiB (16 TiB). */
  maxDiskMb: 16_777_216,
  /** Any duration in milliseconds a request sets (a TTL, a visibility timeout): one year. */
  maxDurationMs: 365 * 24 * 3600 * 1000,
  /** A start timeout in seconds: one day. */
  maxTimeoutS: 86_400,
  /** Crash counts, tag indexes, exit codes: a PostgreSQL INTEGER (int4) holds no more. */
  maxInt32: 2_147_483_647,
  minInt32: -2_147_483_648,
  /** Guids, domains, cell ids, lease names and holders, zones, tag epochs, placement tags. */
  maxNameLength: 255,
  /** Image references (a registry host, a path, a tag and a digest fit with room to spare). */
  maxImageLength: 1024,
  /** One argv element or env value: Linux's MAX_ARG_STRLEN. */
  maxArgLength: 131_072,
  /** Elements of an argv. */
  maxArgs: 1024,
  /** Environment variables of one container. */
  maxEnvVars: 1024,
  /** Container ports of one LRP. */
  maxPorts: 64,
  /** Placement tags of an LRP, a task or a cell. */
  maxPlacementTags: 64,
  /** A DesiredLRP's annotation: Diego's limit (10 KiB). */
  maxAnnotationLength: 10_240,
  /** A DesiredLRP's routes as JSON: Diego's limit (128 KiB), and at most this many route keys. */
  maxRoutesBytes: 131_072,
  maxRouteKeys: 64,
  /** URLs (callbacks, webhooks, rep URLs), file paths in a container (result_file, monitor path). */
  maxUrlLength: 4096,
  /** Free-text messages: failure and crash reasons, placement errors, history messages, results. */
  maxMessageLength: 65_536,
  /** Logs stored with one finalization (the cell keeps the last 1 MiB by default). */
  maxLogsLength: 4 * 1024 * 1024,
  /** Nesting of any JSON request body: deeper is refused before it is parsed. */
  maxJsonDepth: 32,
  /** Any JSON or YAML request body, in bytes. */
  maxBodyBytes: 16 * 1024 * 1024,
  /** Items of one batch request (acks, history ingest, agent actions, rep work). */
  maxBatchItems: 10_000,
} as const;

/**
 * Every string berth stores must be one PostgreSQL `text` can hold (no U+0000) and one that
 * round-trips through UTF-8 (no unpaired surrogate: it would be stored as U+FFFD, so a guid with
 * one could never be found, or deleted, again). Written so it means the same with and without
 * the `u` flag (ajv compiles patterns with it, TypeBox's Value without): with `u` a pair is one
 * code point outside the class; without it, the second branch takes the pair.
 */
export const textPattern = '^(?:[^\\u0000\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$';
const textRegExp = new RegExp(textPattern);

/** Whether `value` is text berth can store (see `textPattern`). */
export function isStorableText(value: string): boolean {
  return textRegExp.test(value);
}

/**
 * How deeply a JSON text nests (`[]` and `{}` levels), scanned without parsing so a body nested
 * 100,000 deep is measured in linear time and constant stack. Stops counting past `stopAt`.
 */
export function jsonNestingDepth(text: string, stopAt = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAt) return deepest;
      }
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}
