/**
 * The entry of the pod commands' one-file bundle (`dist/cli/pod-main.bundle.cjs`, made by
 * scripts/bundle-pod-cli.mjs after tsc). `berth run` pays node's start, then this: loading the
 * `run` path as 37 ES modules cost ~30 ms, one CommonJS file ~11 ms. bin/berth sends the pod
 * commands here and everything else to main.ts; both run a command the same way (command-runner).
 */
import { exitAfterDrain, runSpec } from './command-runner.js';
import { commands } from './pod-commands.js';

export const podCommandNames: readonly string[] = commands.map((c) => c.name);

export async function runPodCommandAndExit(argv: readonly string[]): Promise<never> {
  const spec = commands.find((c) => c.name === argv[0]);
  if (!spec) throw new Error(`not a pod command: ${String(argv[0])}`);
  return exitAfterDrain(await runSpec(spec, argv.slice(1)));
}
