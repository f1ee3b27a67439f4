/**
 * The entry of the pod commands' one-file bundle (`dist/cli/pod-main.bundle.cjs`, made by
 * scripts/bundle-pod-cli.mjs after tsc). `berth run` pays node's start, then this: loading the
 * `run` path as 37 ES modules cost ~30 ms, one CommonJS file ~11 ms. bin/berth sends the pod
 * commands here and everything else to main.ts; both run a row of the one command table the same
 * way (command-runner).
 */
import { exitAfterDrain, runEntry } from './command-runner.js';
import { podCommandTable } from './pod-command-table.js';

export const podCommandNames: readonly string[] = podCommandTable.map((c) => c.name);

export async function runPodCommandAndExit(argv: readonly string[]): Promise<never> {
  const entry = podCommandTable.find((c) => c.name === argv[0]);
  if (!entry) throw new Error(`not a pod command: ${String(argv[0])}`);
  return exitAfterDrain(await runEntry(entry, argv.slice(1)));
}
