import { readdirSync, readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The built console's files (scripts/build-console.mjs), beside dist/api/ and dist/cli/ alike. */
const consoleDir = new URL('../console/', import.meta.url);

interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

function readAsset(name: string, type: string): Asset | undefined {
  try {
    return { type, body: readFileSync(new URL(name, consoleDir)) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

const assetTypes: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.map': 'application/json',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

/** The built assets: the page's bundle, the chunks it loads later (the terminal), stylesheets. */
function assetNames(): string[] {
  try {
    return readdirSync(new URL('assets/', consoleDir));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/**
 * The console (issue 24): one page for every path under /console/ (the page routes in the
 * browser, so a deep link or a reload lands on the right view), and its assets. Read once at
 * start: they change only with a new build. The page's Content-Security-Policy allows nothing
 * but this server, which is all it needs: berth runs offline and loads nothing from elsewhere.
 */
export async function consolePlugin(app: FastifyInstance): Promise<void> {
  const page = readAsset('index.html', 'text/html; charset=utf-8');
  const assets = new Map<string, Asset>();
  for (const name of assetNames()) {
    const type = assetTypes[name.slice(name.lastIndexOf('.'))];
    const asset = type ? readAsset(`assets/${name}`, type) : undefined;
    if (asset) assets.set(name, asset);
  }
  const security = {
    'content-security-policy':
      "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
  app.get('/console/assets/:name', { schema: { hide: true } }, async (request, reply) => {
    const asset = assets.get((request.params as { name: string }).name);
    if (!asset) return reply.code(404).type('text/plain').send('No such console asset');
    return reply.headers(security).header('cache-control', 'no-cache').type(asset.type).send(asset.body);
  });
  const sendPage = async (_request: FastifyRequest, reply: FastifyReply) => {
    if (!page)
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (scripts/build-console.mjs).');
    return reply.headers(security).header('cache-control', 'no-cache').type(page.type).send(page.body);
  };
  // The server's root is the console (the older one-page dashboard it replaced lived here). The
  // browser keeps a URL's fragment across a redirect, so `/#token=…` arrives as `/console/#token=…`.
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console', { schema: { hide: true } }, sendPage);
  app.get('/console/*', { schema: { hide: true } }, sendPage);
}
