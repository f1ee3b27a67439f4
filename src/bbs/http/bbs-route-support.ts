import { Type } from '@sinclair/typebox';
import { BerthError, checkCallbackUrl, InvalidArgumentError } from '../../core/index.js';
import type { ModificationTag } from '../bbs-types.js';
import { CasConflictError, formatTag, parseTag } from '../cas-conflict-error.js';
import type { BbsRoutesOptions } from './bbs-routes-options.js';

/** What the BBS's route rooms share: paging query, ETag and If-Match, the callback-URL check. */

export const IfMatch = Type.Object({ 'if-match': Type.Optional(Type.String()) });

/** Both ways in (public and internal) refuse a callback URL the server must not call. */
export function taskCallbackCheck(
  options: BbsRoutesOptions,
): (body: { completion_callback_url?: string | undefined } | undefined) => void {
  const callbackTargets = { allowPrivate: options.allowPrivateCallbacks === true };
  return (body) => {
    const url = body?.completion_callback_url;
    if (url) checkCallbackUrl(url, 'completion_callback_url', callbackTargets);
  };
}

export function etag(tag: ModificationTag): string {
  return `"${formatTag(tag)}"`;
}

export function ifMatch(header: string | undefined): ModificationTag | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const tag = parseTag(header);
  if (!tag) {
    throw new InvalidArgumentError(
      `Invalid If-Match header "${header}": expected an ETag this API returned`,
      {
        field: 'if-match',
      },
    );
  }
  return tag;
}

/** On the public routes a stale If-Match is HTTP's 412, not the internal routes' 409. */
export async function asPrecondition<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof CasConflictError) {
      throw new BerthError('precondition_failed', `${err.message}; read it again and retry`, err.details);
    }
    throw err;
  }
}

export function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}
