import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';

const isRoot = process.getuid?.() === 0;
const hasIptables = spawnSync('iptables', ['--version']).status === 0;
const chain = `BERTH-T${process.pid}`;
const netfilterModule = new URL('./netfilter.js', import.meta.url).href;

/** One process adding the rule, as a cell starting up does. */
function racer(runDir: string): Promise<number> {
  const script = `const { ensureRule } = await import(${JSON.stringify(netfilterModule)});
ensureRule('ipv4', 'filter', [${JSON.stringify(chain)}, '-s', '10.99.0.1/32', '-j', 'RETURN'], false);`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, BERTH_NET_RUN_DIR: runDir },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve(code ?? -1));
  });
}

describe('ensureRule', { skip: !isRoot || !hasIptables ? 'needs root and iptables' : false }, () => {
  const runDir = mkdtempSync(join(tmpdir(), 'berth-netfilter-'));
  after(() => {
    spawnSync('iptables', ['-w', '-F', chain]);
    spawnSync('iptables', ['-w', '-X', chain]);
    rmSync(runDir, { recursive: true, force: true });
  });

  it('adds a rule once when processes race to add it', async () => {
    assert.equal(spawnSync('iptables', ['-w', '-N', chain]).status, 0);
    for (let round = 0; round < 5; round++) {
      spawnSync('iptables', ['-w', '-F', chain]);
      const codes = await Promise.all(Array.from({ length: 6 }, () => racer(runDir)));
      assert.deepEqual(codes, [0, 0, 0, 0, 0, 0]);
      const rules = spawnSync('iptables', ['-w', '-S', chain], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter((line) => line.startsWith('-A '));
      assert.equal(rules.length, 1, `round ${round}: ${rules.join(' | ')}`);
    }
  });
});
