import { chmodSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** What berth keeps at the top of a data dir: a directory holding one of them is berth's. */
const berthEntries = [
  'pods',
  'runc',
  'images',
  'bbs.sqlite3',
  'admin.token',
  'pod-history',
  'history-journal',
];

/**
 * Creates a directory only its owner (root) may enter (0700), as podman keeps its storage: below it
 * are databases, pod manifests with their env, tokens. An existing directory loses its group and
 * other bits too (a data dir made 0755 by an older berth), but only when it is berth's own: made
 * just now, or holding what berth keeps there, and never `/` or a sticky directory such as /tmp
 * (`--dir /tmp` must not lock everyone else out of /tmp). Returns whether it is private now.
 */
export function ensurePrivateDir(path: string, options: { readonly owned?: boolean } = {}): boolean {
  const created = mkdirSync(path, { recursive: true, mode: 0o700 }) !== undefined;
  const { mode } = statSync(path);
  if ((mode & 0o077) === 0) return true;
  const sticky = (mode & 0o1000) !== 0;
  const ours = created || options.owned === true || berthEntries.some((name) => existsSync(join(path, name)));
  if (path === '/' || sticky || !ours) return false;
  chmodSync(path, mode & 0o7700);
  return true;
}
