import { isBerthError } from '../core/index.js';
import type { ResolvedImage } from '../runtime/image/index.js';
import type { ImageResolver } from '../runtime/index.js';

/**
 * A cell given several servers (`--bbs A,B`) pulls images from the one that answered last, and
 * moves to the next when a pull finds no server there (`unavailable`), as the HTTP JSON client
 * does for the API (core/http-json-client.ts). Any other failure (no such image, a bad digest) is
 * that server's answer and final. Each server's registry holds what was pushed to IT: an image
 * must be pushed to every server a cell may pull from (docs/operations.md).
 */
export function failoverImageResolver(resolvers: readonly ImageResolver[]): ImageResolver {
  if (resolvers.length === 1) return resolvers[0]!;
  let current = 0;
  return {
    async resolve(ref: string): Promise<ResolvedImage> {
      for (let tried = 1; ; tried++) {
        const from = current;
        try {
          return await resolvers[from]!.resolve(ref);
        } catch (err) {
          if (!isBerthError(err) || err.code !== 'unavailable' || tried >= resolvers.length) throw err;
          if (current === from) current = (from + 1) % resolvers.length;
        }
      }
    },
  };
}
