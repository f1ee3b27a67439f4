import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidArgumentError } from './berth-error.js';
import { isStorableText, jsonNestingDepth, limits } from './limits.js';

/**
 * What no JSON schema can say, checked once for every request of an app (the API server and the
 * rep's): a JSON body nests at most `limits.maxJsonDepth` deep (measured before parsing, so a body
 * nested 100,000 deep costs one linear scan and never reaches a recursive consumer such as
 * JSON.stringify), and every string in the body, the query and the path, keys included, is text
 * both databases store as sent (`isStorableText`). Both refusals are 400s naming the field.
 */
export function installRequestGuards(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    const depth = jsonNestingDepth(text, limits.maxJsonDepth);
    if (depth > limits.maxJsonDepth) {
      done(
        new InvalidArgumentError(
          `Invalid body: nests deeper than ${limits.maxJsonDepth} levels of objects and arrays`,
          { field: 'body', location: 'body', limit: limits.maxJsonDepth },
        ),
        undefined,
      );
      return;
    }
    parseJson(request, text, done);
  });
  app.addHook('preValidation', async (request: FastifyRequest) => {
    for (const [location, value] of [
      ['params', request.params],
      ['querystring', request.query],
      ['body', request.body],
    ] as const) {
      const bad = findUnstorableText(value);
      if (bad) {
        throw new InvalidArgumentError(`Invalid ${location}: ${bad.field || location} ${bad.reason}`, {
          field: bad.field || location,
          location,
        });
      }
    }
  });
}

export interface UnstorableText {
  /** Dotted path of the string (or of the object whose key it is); '' for the value itself. */
  readonly field: string;
  readonly reason: string;
}

/**
 * The first string (value or key) in `value` that is not storable text, or undefined. Walks with
 * its own stack, so any depth is safe; objects are visited once.
 */
export function findUnstorableText(value: unknown): UnstorableText | undefined {
  const stack: Array<[unknown, string]> = [[value, '']];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current === 'string') {
      if (!isStorableText(current)) return { field: path, reason: textProblem(current) };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], join(path, String(i))]);
    } else if (typeof current === 'object' && current !== null) {
      for (const [key, inner] of Object.entries(current)) {
        if (!isStorableText(key)) return { field: path, reason: `has a key that ${textProblem(key)}` };
        stack.push([inner, join(path, key)]);
      }
    }
  }
  return undefined;
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function textProblem(text: string): string {
  return text.includes('\u0000')
    ? 'contains U+0000 (NUL), which no string may hold'
    : 'contains an unpaired UTF-16 surrogate: send valid Unicode';
}

/** Whether `value` nests deeper than `max` levels of arrays and objects (own stack, any depth). */
export function nestingDepthExceeds(value: unknown, max: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (depth + 1 > max) return true;
    for (const inner of Array.isArray(current) ? current : Object.values(current))
      stack.push([inner, depth + 1]);
  }
  return false;
}

/** Requests whose handler said they changed nothing worth a line at info (see `markUnchanged`). */
const unchangedRequests = new WeakSet<FastifyRequest>();

/**
 * Says that a request which succeeds changes nothing an operator follows in the log: a read sent
 * as a POST (the BBS's internal operations), a heartbeat that only extends a presence, a take
 * that found nothing. Such requests are every cell's safety-net traffic, and at a thousand cells a
 * line each at info is most of what the server writes and a few percent of its CPU.
 */
export function markUnchanged(request: FastifyRequest): void {
  unchangedRequests.add(request);
}

/** Whether a successful request is logged at debug: a GET, or one its handler marked unchanged. */
export function isUnchangedRequest(request: FastifyRequest): boolean {
  return request.method === 'GET' || unchangedRequests.has(request);
}
