/**
 * `npm run bench registry-peer [runs] [MiB] [layers] [concurrent]`: berth's registry beside the
 * reference implementation (Debian's docker-registry, CNCF distribution v2) in one run, skopeo as
 * the client of both: a push of a 200 MiB image of several gzip'd layers of random bytes (so no
 * compression shortcut and no recompression by skopeo), a pull of it, and 10 concurrent pulls,
 * each in MiB/s of image bytes moved. Both registries store on the same disk; berth's push
 * includes what a berth push does beyond storing (verifying diff_ids, flattening the rootfs), and
 * a last row times berth's own client (`berth image pull`) from the reference registry.
 */
import { type ExecFileOptions, execFile } from 'node:child_process';
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
import { fmt, hasCommand } from './bench-util.js';

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

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

if (!hasCommand('skopeo') || !hasReferenceRegistry) {
  console.log('registry-peer needs skopeo and docker-registry (scripts/setup installs both)');
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
  const rate = (ms: number, times = 1) => `${((times * bytes) / 1024 / 1024 / (ms / 1000)).toFixed(0)} MiB/s`;

  const results = new Map<string, number[]>();
  const record = (name: string, ms: number) => results.set(name, [...(results.get(name) ?? []), ms]);

  for (let run = 0; run < runs; run++) {
    const reference = await startReferenceRegistry(join(work, `reference-${run}`));
    const berth = await startBenchServer(join(work, `berth-${run}`));
    const hosts = { 'docker-registry': reference.host, berth: new URL(berth.url).host };
    try {
      for (const [name, host] of Object.entries(hosts)) {
        const ref = `docker://${host}/bench/big:1`;
        record(
          `${name} push`,
          await timed(() => skopeo(['copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}`, ref])),
        );
        const out = (i: number) => `oci:${join(work, `pulled-${name}-${run}-${i}`)}`;
        record(
          `${name} pull`,
          await timed(() => skopeo(['copy', '--quiet', '--src-tls-verify=false', ref, out(0)])),
        );
        record(
          `${name} ${concurrent} concurrent pulls`,
          await timed(() =>
            Promise.all(
              Array.from({ length: concurrent }, (_, i) =>
                skopeo(['copy', '--quiet', '--src-tls-verify=false', ref, out(i + 1)]),
              ),
            ),
          ),
        );
        for (let i = 0; i <= concurrent; i++)
          rmSync(join(work, `pulled-${name}-${run}-${i}`), { recursive: true, force: true });
      }
      const source = pullSource(`${reference.host}/bench/big:1`, { serverUrl: berth.url });
      const store = openImageStore(join(work, `client-${run}`));
      record(
        'berth image pull from docker-registry',
        await timed(() => pullImage(store, source.client, source.reference)),
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
  for (const [name, times] of results) {
    const many = name.includes('concurrent') ? concurrent : 1;
    console.log(`${name.padEnd(42)} ${fmt(median(times)).padStart(9)}  ${rate(median(times), many)}`);
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
