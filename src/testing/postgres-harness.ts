import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away PostgreSQL server for tests: initdb into a temp dir, listening only on a unix
 * socket in that dir (no TCP port to collide with), stopped and deleted by `stop()`. Needs only
 * the Debian `postgresql` package (its binaries under /usr/lib/postgresql/N/bin), nothing running.
 */
export interface PostgresServer {
  /** postgres://postgres@/DB?host=SOCKETDIR for the database created for the caller. */
  readonly url: string;
  /** Creates one more empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  stop(): Promise<void>;
}

/** The newest installed PostgreSQL's bin dir, or undefined when the package is missing. */
export function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], 'bin');
}

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresSkipReason(): string | undefined {
  return findPostgresBin()
    ? undefined
    : 'PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql';
}

export async function startPostgres(database = 'berth_test'): Promise<PostgresServer> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(postgresSkipReason());
  const dir = mkdtempSync(join(tmpdir(), 'berth-pg-'));
  const data = join(dir, 'data');
  // postgres refuses to run as root: run it as the `postgres` OS user the package created.
  const asRoot = process.getuid?.() === 0;
  const user = asRoot ? postgresUser() : undefined;
  if (user) {
    chownSync(dir, user.uid, user.gid);
    chmodSync(dir, 0o700);
  }
  const run = (cmd: string, args: string[]) =>
    user ? (['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const) : ([cmd, args] as const);
  const [initCmd, initArgs] = run(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '--auth=trust',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  execFileSync(initCmd, [...initArgs], { stdio: 'pipe' });
  const [pgCmd, pgArgs] = run(join(bin, 'postgres'), [
    '-D',
    data,
    '-k',
    dir,
    '-h',
    '',
    '-c',
    'max_connections=200',
    // Test and benchmark databases are disposable; fsync stays on so commit costs are real.
    '-c',
    'shared_buffers=128MB',
  ]);
  const server = spawn(pgCmd, [...pgArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  server.stderr?.on('data', (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  });
  const socket = join(dir, '.s.PGSQL.5432');
  const started = Date.now();
  while (!existsSync(socket)) {
    if (server.exitCode !== null || Date.now() - started > 30_000) {
      server.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postgres did not start: ${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const urlFor = (db: string) => `postgres://postgres@/${db}?host=${encodeURIComponent(dir)}`;
  const createDatabase = async (name: string): Promise<string> => {
    await createDb(bin, dir, name, run);
    return urlFor(name);
  };
  await createDatabase(database);
  return {
    url: urlFor(database),
    createDatabase,
    stop: () => stopServer(server, dir, data),
  };
}

async function createDb(
  bin: string,
  socketDir: string,
  name: string,
  run: (cmd: string, args: string[]) => readonly [string, readonly string[]],
): Promise<void> {
  // The socket appears a moment before the server accepts connections: retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      const [cmd, args] = run(join(bin, 'createdb'), ['-h', socketDir, '-U', 'postgres', name]);
      execFileSync(cmd, [...args], { stdio: 'pipe' });
      return;
    } catch (err) {
      if (attempt > 50) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

async function stopServer(server: ChildProcess, dir: string, data: string): Promise<void> {
  if (server.exitCode === null) {
    const exited = new Promise((resolve) => server.once('exit', resolve));
    // SIGINT = "fast shutdown": rolls back open sessions and exits promptly. It goes to the
    // postmaster itself (postmaster.pid), since runuser in between does not forward it.
    const postmaster = readPostmasterPid(data);
    if (postmaster !== undefined) process.kill(postmaster, 'SIGINT');
    else server.kill('SIGINT');
    const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
  rmSync(dir, { recursive: true, force: true });
}

function readPostmasterPid(data: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function postgresUser(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}
