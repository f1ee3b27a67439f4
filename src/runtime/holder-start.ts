import { statSync } from 'node:fs';
import { type HolderJob, HolderPool, type HolderRun, type HolderStarter } from './holder-pool.js';
import { spawnNative } from './native-process.js';

/**
 * How a detached pod's stage-1 holder is started: a process of its own per pod (`berth run -d`,
 * which leaves nothing behind to reuse one), or a holder a long-lived caller reuses (a cell:
 * holder-pool.ts). Both hand the holder the pod's lock and log and give back the same run.
 */
export function holderStarter(reuse: boolean): HolderStarter {
  if (!reuse) return { run: startOwnHolder, close: () => {} };
  return new HolderPool({
    spawn: (controlFd) =>
      spawnNative(process.execPath, [holderEntry(), '--serve'], {
        stdio: ['null', 'null', 'null', controlFd],
        newSession: true,
        env: holderEnvironment(),
        watch: 'unref',
      }),
  });
}

function startOwnHolder(job: HolderJob, lockFd: number, logFd: number): HolderRun {
  // posix_spawn through berth's addon: a cell's executor, a node process with a large heap,
  // starts every instance this way, and node's spawn would fork all of it first.
  const child = spawnNative(
    process.execPath,
    [holderEntry(), job.dataDir, job.uuid, job.remove ? 'rm' : 'keep'],
    {
      stdio: ['null', logFd, logFd, lockFd, 'pipe'],
      newSession: true,
      env: holderEnvironment(),
      // Reaped (no zombie in a long-running caller) and reported the moment it ends; the watch
      // does not keep the caller running for that.
      watch: 'unref',
    },
  );
  return { pid: child.pid, answers: child.pipes.get(4), ended: child.exited.then(() => undefined) };
}

/**
 * The holder makes no TLS connection: it starts without NODE_EXTRA_CA_CERTS, which costs Node 20
 * ~30 ms at start when set (bin/berth does the same for the pod commands).
 */
function holderEnvironment(): NodeJS.ProcessEnv {
  const { NODE_EXTRA_CA_CERTS: _, ...env } = process.env;
  return env;
}

/**
 * The stage-1 holder's entry: bin/berth-holder.cjs, which runs the one-file CommonJS bundle `npm
 * run build` makes of it (scripts/bundle-pod-cli.mjs; ~15 ms sooner to start than its ES modules)
 * with V8's code cache (~10 ms more), unless the bundle is older than tsc's output (a build that
 * stopped at tsc): then the ES module itself.
 */
export function holderEntry(): string {
  const main = new URL('./stage1-holder-main.js', import.meta.url).pathname;
  const bundle = new URL('./stage1-holder.bundle.cjs', import.meta.url).pathname;
  try {
    return statSync(bundle).mtimeMs >= statSync(main).mtimeMs
      ? new URL('../../bin/berth-holder.cjs', import.meta.url).pathname
      : main;
  } catch {
    return main;
  }
}
