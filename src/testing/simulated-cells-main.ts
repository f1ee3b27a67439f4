// A process of simulated cells (`spawnSimulatedCells`): reads its SimulatedCellsConfig as JSON on
// stdin, prints one line once every cell runs, evacuates them all on SIGTERM, and exits; on
// SIGUSR2 it exits at once, as node does at an exit (so a --cpu-prof profile gets written).
import { text } from 'node:stream/consumers';
import { type SimulatedCellsConfig, startSimulatedCells } from './simulated-cells.js';

const config = JSON.parse(await text(process.stdin)) as SimulatedCellsConfig;
const verbose = process.env.BERTH_SIM_LOG === '1';
const host = await startSimulatedCells(config, (message) => {
  if (verbose) process.stderr.write(`${message}\n`);
});
process.stdout.write(`${host.cells.length} simulated cells ready\n`);
process.once('SIGTERM', () => {
  void host.drain().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`drain failed: ${String(err)}\n`);
      process.exit(1);
    },
  );
});
process.once('SIGUSR2', () => process.exit(0));
