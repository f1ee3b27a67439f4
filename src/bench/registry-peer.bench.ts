/**
 * `npm run bench registry-peer [runs] [MiB] [layers] [concurrent]`: berth's registry beside the
 * reference implementation (Debian's docker-registry, CNCF distribution v2) in one run, skopeo as
 * the client of both: a push of a 200 MiB image of several gzip'd layers of random bytes (so no
 * compression shortcut and no recompression by skopeo), a pull of it, and 10 concurrent pulls,
 * each in MiB/s of image bytes moved. Both registries store on the same disk; berth's push
 * includes what a berth push does beyond storing (verifying diff_ids, flattening the rootfs), and
 * a last row times berth's own client (`berth image pull`) from the reference registry. Which
 * registry goes first alternates by run, and the disk is flushed before each measured step.
 *
 * skopeo hashes and writes every byte it pulls, so with ten of them on two cores the clients set
 * the pull rates more than the servers do. One more row takes the clients out: `concurrent` curl
 * processes each GET every layer of the image and discard the bytes, which is the rate each
 * server can serve blobs at on this machine.
 *
 * Wall-clock on a shared machine says little, so each row also gives the server's CPU seconds
 * (user + system, from /proc) per GiB moved, and each step runs against both registries back to
 * back. After its push the bench waits for each server to go idle (berth writes the rootfs
 * after its reply) and reports that work in its own row, so a pull is timed on a server doing
 * nothing else. `BERTH_BENCH_SERVER_NODE_ARGS` (e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`) is passed to berth's server process.
 */
import { type ExecFileOptions, execFile, execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync, gzipSync } from 'node:zlib';
import { pullImage, pullSource } from '../registry/index.js';
import { openImageStore } from '../runtime/image/index.js';
import { tarBytes, writeOciLayout } from '../testing/oci-fixture-builder.js';
import { hasReferenceRegistry, startReferenceRegistry } from '../testing/reference-registry.js';
import { startBenchServer } from './bench-server.js';
import { fmt, hasCommand, processUsage } from './bench-util.js';

const runs = Number(process.argv[2] ?? 1);
const mib = Number(process.argv[3] ?? 200);
const layerCount = Number(process.argv[4] ?? 4);
const concurrent = Number(process.argv[5] ?? 10);

const exec = promisify(execFile);
const skopeo = (args: readonly string[]) =>
  exec('skopeo', ['--insecure-policy', ...args], { maxBuffer: 16 * 1024 * 1024 } satisfies ExecFileOptions);

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

/** CPU seconds (user + system, waited-for children included) process `pid` has used so far. */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  const { cpuSeconds, childrenCpuSeconds } = processUsage(pid);
  return cpuSeconds + childrenCpuSeconds;
}

interface Sample {
  readonly ms: number;
  readonly cpu: number;
}

/** Wall time of `fn` and the CPU seconds `pid` spent meanwhile. */
async function measured(pid: number | undefined, fn: () => Promise<unknown>): Promise<Sample> {
  const cpu = cpuSeconds(pid);
  const start = process.hrtime.bigint();
  await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, cpu: cpuSeconds(pid) - cpu };
}

/**
 * Resolves once `pid` has used (almost) no CPU for half a second: its work after a reply is done.
 * An idle berth server uses about 6 ms per half second (its service loops), hence the 10 ms; a
 * profiled one never gets that quiet, hence the minute's cap.
 */
async function idle(pid: number | undefined): Promise<void> {
  let last = cpuSeconds(pid);
  for (let waited = 0; waited < 60_000; waited += 500) {
    await new Promise((r) => setTimeout(r, 500));
    const now = cpuSeconds(pid);
    if (!(now - last > 0.01)) return;
    last = now;
  }
}

if (!hasCommand('skopeo') || !hasCommand('curl') || !hasReferenceRegistry) {
  console.log('registry-peer needs skopeo, curl and docker-registry (scripts/setup installs them)');
  process.exit(0);
}

const work = mkdtempSync(join(tmpdir(), 'berth-bench-registry-peer-'));
try {
  // The image: `layerCount` gzip'd layers of random bytes (gzip of random data is its size).
  const layout = join(work, 'layout');
  mkdirSync(layout);
  const perLayer = Math.floor((mib * 1024 * 1024) / layerCount);
  const blobs: Buffer[] = [];
  for (let i = 0; i < layerCount; i++) {
    blobs.push(
      gzipSync(await tarBytes([{ name: `layer-${i}.bin`, body: randomBytes(perLayer) }]), { level: 1 }),
    );
  }
  writeOciLayout(layout, {
    layers: blobs.map(() => Buffer.alloc(0)),
    blobs,
    diffIds: blobs.map((b) => `sha256:${createHash('sha256').update(gunzipSync(b)).digest('hex')}`),
  });
  const bytes = blobs.reduce((sum, b) => sum + b.length, 0);
  const layerDigests = blobs.map((b) => `sha256:${createHash('sha256').update(b).digest('hex')}`);
  const mibPerSecond = (ms: number, times = 1) => ((times * bytes) / 1024 / 1024 / (ms / 1000)).toFixed(0);
  const rate = (ms: number, times = 1) => `${mibPerSecond(ms, times)} MiB/s`;

  const results = new Map<string, Sample[]>();
  const record = (name: string, sample: Sample) => results.set(name, [...(results.get(name) ?? []), sample]);
  const nodeArgs = (process.env.BERTH_BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');

  for (let run = 0; run < runs; run++) {
    const reference = await startReferenceRegistry(join(work, `reference-${run}`));
    const berth = await startBenchServer(join(work, `berth-${run}`), nodeArgs);
    const servers = {
      'docker-registry': { host: reference.host, pid: reference.pid },
      berth: { host: new URL(berth.url).host, pid: berth.child.pid },
    };
    const ref = (host: string) => `docker://${host}/bench/big:1`;
    const pulled = (name: string, i: number) => join(work, `pulled-${name}-${run}-${i}`);
    const out = (name: string, i: number) => `oci:${pulled(name, i)}`;
    // Each step runs against both registries back to back, so that the two figures of a row are
    // taken under the same load (it moves by the minute on a shared machine).
    const steps: readonly (readonly [string, (name: string, host: string) => Promise<unknown>])[] = [
      [
        'push',
        (_, host) => skopeo(['copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}`, ref(host)]),
      ],
      [
        'pull',
        (name, host) => skopeo(['copy', '--quiet', '--src-tls-verify=false', ref(host), out(name, 0)]),
      ],
      [
        `${concurrent} concurrent blob reads (curl, discarded)`,
        (_, host) =>
          Promise.all(
            Array.from({ length: concurrent }, () =>
              exec('curl', [
                '--silent',
                '--fail',
                ...layerDigests.flatMap((d) => ['-o', '/dev/null', `http://${host}/v2/bench/big/blobs/${d}`]),
              ]),
            ),
          ),
      ],
      [
        `${concurrent} concurrent pulls`,
        (name, host) =>
          Promise.all(
            Array.from({ length: concurrent }, (_, i) =>
              skopeo(['copy', '--quiet', '--src-tls-verify=false', ref(host), out(name, i + 1)]),
            ),
          ),
      ],
    ];
    // The order alternates by run, and the disk is flushed before each measured step: a pull
    // writes what it pulls (2 GiB for ten concurrent ones), and the registry measured second
    // otherwise paid for writing back the first one's output (berth, always second, was).
    const order = Object.entries(servers);
    if (run % 2 === 1) order.reverse();
    try {
      for (const [step, action] of steps) {
        for (const [name, { host, pid }] of order) {
          execFileSync('sync');
          record(`${name} ${step}`, await measured(pid, () => action(name, host)));
          if (step === 'push')
            record(`${name} push: work after the reply`, await measured(pid, () => idle(pid)));
        }
      }
      for (const name of Object.keys(servers)) {
        for (let i = 0; i <= concurrent; i++) rmSync(pulled(name, i), { recursive: true, force: true });
      }
      const source = pullSource(`${reference.host}/bench/big:1`, { serverUrl: berth.url });
      const store = openImageStore(join(work, `client-${run}`));
      record(
        'berth image pull from docker-registry',
        await measured(reference.pid, () => pullImage(store, source.client, source.reference)),
      );
    } finally {
      berth.child.kill('SIGTERM');
      await reference.stop();
      rmSync(join(work, `reference-${run}`), { recursive: true, force: true });
      rmSync(join(work, `berth-${run}`), { recursive: true, force: true });
      rmSync(join(work, `client-${run}`), { recursive: true, force: true });
    }
  }

  console.log(
    `image: ${(bytes / 1024 / 1024).toFixed(1)} MiB in ${layerCount} gzip'd random layers; skopeo as the client; median of ${runs} run(s)`,
  );
  console.log(
    `${''.padEnd(58)} ${'wall'.padStart(9)}  ${'rate'.padStart(10)}  ${'runs, MiB/s'.padStart(21)}  server CPU`,
  );
  for (const [name, samples] of results) {
    // A blob read moves the layers only, a few hundred bytes short of a pull's bytes.
    const many = name.includes('concurrent') ? concurrent : 1;
    const ms = median(samples.map((s) => s.ms));
    const cpu = median(samples.map((s) => s.cpu));
    const perGiB = cpu / ((many * bytes) / 1024 ** 3);
    const afterReply = name.includes('after the reply');
    const shown = afterReply ? '' : rate(ms, many);
    // The runs' slowest and fastest rates: on a shared machine they say how far a median can move.
    const walls = samples.map((s) => s.ms);
    const range =
      afterReply || runs < 2
        ? ''
        : `${mibPerSecond(Math.max(...walls), many)}–${mibPerSecond(Math.min(...walls), many)}`;
    console.log(
      `${name.padEnd(58)} ${fmt(ms).padStart(9)}  ${shown.padStart(10)}  ${range.padStart(21)}  ${cpu.toFixed(2)} s, ${perGiB.toFixed(2)} s/GiB`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
