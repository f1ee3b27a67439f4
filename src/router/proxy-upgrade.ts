import type { IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Picker } from './instance-picker.js';
import { forwardedHeaders, hostOf, pathOf } from './proxy-headers.js';
import type { RoutePool } from './route-table.js';

/**
 * An `Upgrade` request (WebSockets): the instance is connected with a raw socket, the request head
 * written to it, then both sockets are piped until either closes.
 */
export function handleUpgrade(
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
  lookup: (host: string, path: string) => RoutePool | undefined,
  picker: Picker,
): void {
  const host = hostOf(req.headers.host);
  const url = req.url ?? '/';
  const pool = lookup(host, pathOf(url));
  const refuse = (status: number, text: string) => {
    socket.end(
      `HTTP/1.1 ${status} ${status === 404 ? 'Not Found' : status === 503 ? 'Service Unavailable' : 'Bad Gateway'}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\nconnection: close\r\n\r\n${text}`,
    );
  };
  socket.on('error', () => socket.destroy());
  if (!pool) {
    refuse(404, `berth router: no route for host "${host}"\n`);
    return;
  }
  const endpoint = picker.pick(pool, new Set());
  if (!endpoint) {
    refuse(503, `berth router: no running instance of route "${pool.route}"\n`);
    return;
  }
  picker.started(endpoint);
  const backend = connect(endpoint.port, endpoint.address);
  backend.setNoDelay(true);
  socket.setNoDelay(true);
  backend.once('connect', () => {
    const headers = forwardedHeaders(req, req.headers.host);
    // The upgrade itself is what this connection is for: its Connection and Upgrade go along.
    headers.push('connection', 'Upgrade', 'upgrade', req.headers.upgrade ?? '');
    let text = `${req.method} ${url} HTTP/1.1\r\n`;
    for (let i = 0; i < headers.length; i += 2) text += `${headers[i]}: ${headers[i + 1]}\r\n`;
    backend.write(`${text}\r\n`);
    if (head.length > 0) backend.write(head);
    backend.pipe(socket);
    socket.pipe(backend);
  });
  backend.on('error', (err: NodeJS.ErrnoException) => {
    if (backend.bytesRead === 0 && !socket.destroyed)
      refuse(
        502,
        `berth router: instance ${endpoint.index} of route "${pool.route}" failed: ${err.code ?? err.message}\n`,
      );
    else socket.destroy();
  });
  backend.on('close', () => {
    // 'close' comes once per socket: the instance's count drops once.
    picker.finished(endpoint);
    socket.destroy();
  });
  socket.on('close', () => backend.destroy());
}
