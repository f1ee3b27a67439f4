/**
 * The one error vocabulary of berth. Every layer throws a BerthError (or a subclass) with a stable
 * `code`; the API maps the code to an HTTP status and the CLI to an exit code through the tables
 * below, so a missing mapping fails to compile.
 */
export type ErrorCode =
  | 'invalid_argument'
  | 'not_found'
  | 'already_exists'
  | 'conflict'
  | 'cas_conflict'
  | 'illegal_transition'
  | 'lock_held'
  | 'precondition_failed'
  | 'unauthenticated'
  | 'forbidden'
  | 'unavailable'
  | 'resource_exhausted'
  | 'internal';

export const httpStatusByCode: Readonly<Record<ErrorCode, number>> = {
  invalid_argument: 400,
  not_found: 404,
  already_exists: 409,
  conflict: 409,
  cas_conflict: 409,
  illegal_transition: 409,
  lock_held: 409,
  precondition_failed: 412,
  unauthenticated: 401,
  forbidden: 403,
  unavailable: 503,
  resource_exhausted: 507,
  internal: 500,
};

/** Exit codes of the CLI. 1 stays "generic failure"; 125 mirrors podman's "the tool itself failed". */
export const exitCodeByCode: Readonly<Record<ErrorCode, number>> = {
  invalid_argument: 2,
  not_found: 3,
  already_exists: 4,
  conflict: 4,
  cas_conflict: 4,
  illegal_transition: 4,
  lock_held: 4,
  precondition_failed: 4,
  unauthenticated: 5,
  forbidden: 5,
  unavailable: 6,
  resource_exhausted: 7,
  internal: 125,
};

const retryableCodes: ReadonlySet<ErrorCode> = new Set(['cas_conflict', 'unavailable', 'lock_held']);

/**
 * Marks every BerthError, so isBerthError knows one made by another copy of this module: the CLI's
 * bundle (dist/cli/main.bundle.mjs) has its own copy, and the command modules it loads from dist/
 * (server, image, pod commands) throw errors of the other.
 */
const berthErrorBrand = Symbol.for('berth.BerthError');

export class BerthError extends Error {
  readonly code: ErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'BerthError';
    this.code = code;
    this.details = details;
    Object.defineProperty(this, berthErrorBrand, { value: true });
  }

  /** Whether repeating the same request later may succeed without the caller changing anything. */
  get retryable(): boolean {
    return retryableCodes.has(this.code);
  }

  toJSON(): { code: ErrorCode; message: string; details: Readonly<Record<string, unknown>> } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export class InvalidArgumentError extends BerthError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super('invalid_argument', message, details);
    this.name = 'InvalidArgumentError';
  }
}

export class NotFoundError extends BerthError {
  constructor(kind: string, id: string) {
    super('not_found', `Cannot find ${kind} "${id}"`, { kind, id });
    this.name = 'NotFoundError';
  }
}

/** A state machine was asked for a move its table does not allow. */
export class IllegalTransitionError extends BerthError {
  constructor(machine: string, from: string, to: string, subject?: string) {
    super(
      'illegal_transition',
      `Cannot move ${machine}${subject ? ` ${subject}` : ''} from ${from} to ${to}: the ${machine} table does not allow it`,
      { machine, from, to, ...(subject ? { subject } : {}) },
    );
    this.name = 'IllegalTransitionError';
  }
}

/**
 * The code an HTTP status stands for when the body names none of ours: the inverse of
 * httpStatusByCode (409, shared by several codes, reads as the generic `conflict`), then by class
 * (a gateway's 502/504, 408 and 429 are the peer being unavailable; any other 4xx is the request).
 * Never a blanket `internal`: only a 500 is one.
 */
export function codeForHttpStatus(status: number): ErrorCode {
  if (status === 409) return 'conflict';
  const exact = (Object.entries(httpStatusByCode) as [ErrorCode, number][]).find(([, s]) => s === status);
  if (exact) return exact[0];
  if (status === 408 || status === 429 || status >= 500) return 'unavailable';
  if (status === 413) return 'resource_exhausted';
  return 'invalid_argument';
}

/**
 * A berth API's error response back into a BerthError: the body's code when it is one of ours,
 * else the code its HTTP status stands for (codeForHttpStatus); a body that is not a berth error
 * (a proxy's page) becomes the message. The one copy of this mapping: HttpJsonClient uses it.
 */
export function berthErrorFromHttp(status: number, text: string): BerthError {
  let body: { code?: unknown; message?: unknown; details?: unknown } = {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed;
    else body = { message: text };
  } catch {
    body = { message: text.slice(0, 500) };
  }
  const code =
    typeof body.code === 'string' && body.code in httpStatusByCode
      ? (body.code as ErrorCode)
      : codeForHttpStatus(status);
  const message = typeof body.message === 'string' && body.message !== '' ? body.message : `HTTP ${status}`;
  const details =
    typeof body.details === 'object' && body.details !== null && !Array.isArray(body.details)
      ? (body.details as Record<string, unknown>)
      : {};
  return new BerthError(code, message, details);
}

export function isBerthError(err: unknown): err is BerthError {
  return (
    err instanceof BerthError ||
    (err instanceof Error && (err as unknown as Record<symbol, unknown>)[berthErrorBrand] === true)
  );
}

/** Node's system errors carry `code`; this narrows without `any`. */
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}
