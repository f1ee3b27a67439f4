/**
 * Paths of seed 004's system tree: `/` is the system itself, `/web/api` a node below it. Segments
 * are lower-case DNS labels, so a path can name a DesiredLRP and a directory alike.
 */
export const treePathPattern = /^(\/[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/;

export function isTreePath(path: string): boolean {
  return path === '/' || treePathPattern.test(path);
}

export function segments(path: string): string[] {
  return path === '/' ? [] : path.slice(1).split('/');
}

/** `/a/b/c` → [`/`, `/a`, `/a/b`]: the internal nodes a deploy of it locks intention-exclusive. */
export function ancestors(path: string): string[] {
  const segs = segments(path);
  const out = ['/'];
  for (let i = 1; i < segs.length; i++) out.push(`/${segs.slice(0, i).join('/')}`);
  return path === '/' ? [] : out;
}

/** Whether `outer` is `inner` or one of its ancestors, segment by segment (`/a` contains `/a/b`, not `/ab`). */
export function containsPath(outer: string, inner: string): boolean {
  if (outer === '/' || outer === inner) return true;
  return inner.startsWith(`${outer}/`);
}
