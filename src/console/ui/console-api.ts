import type { ActualLRP, CellPresence, DesiredLRP, Task } from '../../bbs/index.js';
import type { ContainerWithHistory } from '../../history/index.js';
import type { ClusterSnapshot } from '../model/cluster-view.js';

/** A refusal for want of a (valid) token: the console shows its sign-in, keeping the page's state. */
export class SignInNeeded extends Error {}

/** An API error with the server's own message (berth's error body: `{ code, message }`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(message);
  }
}

export interface Principal {
  readonly user: string;
  readonly role: 'viewer' | 'operator' | 'admin';
}

const tokenKey = 'berth-token';

/**
 * The token lives in sessionStorage: an admin token should not outlive the tab. `berth up` prints
 * the console's URL with the token in the fragment, which browsers never send; it is moved into
 * storage and dropped from the address bar at load.
 */
export function adoptTokenFromFragment(): void {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get('token');
  if (!fromHash) return;
  sessionStorage.setItem(tokenKey, fromHash);
  history.replaceState(history.state, '', location.pathname + location.search);
}

export const token = {
  get: (): string => sessionStorage.getItem(tokenKey) ?? '',
  set: (value: string): void => sessionStorage.setItem(tokenKey, value.trim()),
  clear: (): void => sessionStorage.removeItem(tokenKey),
};

/**
 * A 401's sign-in, saying why from what was sent: no token at all, or one the server refused.
 * Every request that can be answered 401 (the API's and the event stream's) says it this way,
 * whichever of them is answered first.
 */
export function signInNeeded(): SignInNeeded {
  return new SignInNeeded(
    token.get() ? 'This token is invalid, expired or revoked.' : 'This server needs an API token.',
  );
}

export function authHeaders(): Record<string, string> {
  const value = token.get();
  return value ? { authorization: `Bearer ${value}` } : {};
}

async function failure(response: Response, path: string): Promise<Error> {
  if (response.status === 401) return signInNeeded();
  const body = (await response.json().catch(() => ({}))) as {
    message?: string;
    details?: Record<string, unknown>;
  };
  return new ApiError(
    response.status,
    body.message ?? `${path}: HTTP ${response.status}`,
    body.details ?? {},
  );
}

export async function apiGet<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await fetch(path, { headers: authHeaders(), ...(signal ? { signal } : {}) });
  if (!response.ok) throw await failure(response, path);
  return (await response.json()) as T;
}

export async function apiSend<T>(
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<T> {
  const response = await fetch(path, {
    method,
    headers: { ...authHeaders(), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!response.ok) throw await failure(response, path);
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

/** Every page of a list route (limit 1000 a page, the routes' maximum). */
async function listAll<T>(path: string, key: string, signal?: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const query = new URLSearchParams({ limit: '1000', ...(cursor ? { cursor } : {}) });
    const page = await apiGet<Record<string, unknown>>(`${path}?${query}`, signal);
    out.push(...((page[key] as T[] | undefined) ?? []));
    cursor = typeof page.next_cursor === 'string' ? page.next_cursor : undefined;
  } while (cursor);
  return out;
}

export function listCells(signal?: AbortSignal): Promise<CellPresence[]> {
  return listAll<CellPresence>('/v1/cells', 'cells', signal);
}

export async function readSnapshot(signal?: AbortSignal): Promise<ClusterSnapshot> {
  const [desired, actual, tasks, cells] = await Promise.all([
    listAll<DesiredLRP>('/v1/desired_lrps', 'desired_lrps', signal),
    listAll<ActualLRP>('/v1/actual_lrps', 'actual_lrps', signal),
    listAll<Task>('/v1/tasks', 'tasks', signal),
    listCells(signal),
  ]);
  return { desired, actual, tasks, cells };
}

export function whoami(): Promise<Principal> {
  return apiGet<Principal>('/v1/whoami');
}

export function containerHistory(instanceGuid: string): Promise<ContainerWithHistory> {
  return apiGet<ContainerWithHistory>(`/v1/containers/${encodeURIComponent(instanceGuid)}`);
}

/**
 * Reads a streaming GET (the logs' NDJSON) as decoded text pieces until it ends or `signal`
 * aborts. A 401 is the sign-in, as everywhere; other refusals carry the server's message.
 */
export async function streamText(
  path: string,
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const response = await fetch(path, { headers: authHeaders(), signal });
  if (!response.ok || !response.body) throw await failure(response, path);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onText(value);
  }
}

export interface ExecTicket {
  readonly ticket: string;
  readonly path: string;
  readonly instance: string;
}

/** `POST /v1/exec` for a terminal into one instance: a one-time ticket for its WebSocket. */
export function startExec(request: {
  readonly app: string;
  readonly index: number;
  readonly command: readonly string[];
  readonly cols: number;
  readonly rows: number;
}): Promise<ExecTicket> {
  return apiSend<ExecTicket>('POST', '/v1/exec', { ...request, tty: true, stdin: true });
}
