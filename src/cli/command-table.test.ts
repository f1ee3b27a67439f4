import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runBerth } from '../testing/berth-cli.js';
import { commandHelp, parseCommandArgs, usageLine } from './command.js';
import { commandTable, findCommand, topLevelHelp } from './command-table.js';

describe('the command table', () => {
  it('names each command once', () => {
    const names = commandTable.map((c) => c.name);
    assert.deepEqual(names, [...new Set(names)]);
  });

  for (const entry of commandTable) {
    describe(`berth ${entry.name}`, () => {
      it('has a summary, and every flag a description its help shows', () => {
        assert.ok(entry.summary.length > 10, 'a summary');
        const help = commandHelp(entry);
        for (const [name, flag] of Object.entries(entry.flags ?? {})) {
          assert.ok(flag.description.length > 3, `--${name} has a description`);
          assert.ok(help.includes(`--${name}`), `--${name} is in the help`);
          assert.ok(help.includes(flag.description), `--${name}'s description is in the help`);
          assert.ok(usageLine(entry).includes(`--${name}`), `--${name} is in the usage line`);
          if (flag.aliasOf) assert.ok(entry.flags?.[flag.aliasOf.flag], `--${name} aliases a flag it has`);
        }
      });

      it('loads a module with its handler', async () => {
        const { commands } = await entry.load();
        assert.ok(
          commands.some((c) => c.name === entry.name),
          `the module has a handler named "${entry.name}"`,
        );
      });

      it('is in berth --help and found by its words', () => {
        assert.ok(topLevelHelp().includes(`  ${entry.name} `), 'listed by berth --help');
        assert.equal(findCommand(entry.name.split(' '))?.entry, entry);
      });
    });
  }

  it('every handler of every module is a row of the table', async () => {
    const modules = new Set(commandTable.map((c) => c.load));
    for (const load of modules) {
      for (const handler of (await load()).commands)
        assert.ok(
          commandTable.some((c) => c.name === handler.name),
          `"${handler.name}" is in the table`,
        );
    }
  });

  it('--json is --format json, and contradicting --format is refused', () => {
    const entry = findCommand(['lrp', 'list'])?.entry;
    assert.ok(entry);
    assert.equal(parseCommandArgs(entry, ['--json']).values.format, 'json');
    assert.equal(parseCommandArgs(entry, ['--json', '--format', 'json']).values.format, 'json');
    assert.throws(() => parseCommandArgs(entry, ['--json', '--format', 'table']), {
      code: 'invalid_argument',
    });
  });

  it('every command that prints records takes --format json and --json', () => {
    const printing = [
      'list',
      'status',
      'image list',
      'task list',
      'lrp list',
      'lrp get',
      'cells',
      'ps',
      'history',
      'system list',
      'system status',
    ];
    for (const name of printing) {
      const flags = findCommand(name.split(' '))?.entry.flags ?? {};
      assert.ok(flags.format?.valueName?.includes('json'), `${name} --format json`);
      assert.deepEqual(flags.json?.aliasOf, { flag: 'format', value: 'json' }, `${name} --json`);
    }
  });
});

describe('berth (a real process)', () => {
  it('--help lists every command and exits 0', async () => {
    const r = await runBerth(['--help']);
    assert.equal(r.code, 0);
    for (const entry of commandTable) assert.match(r.stdout, new RegExp(`^  ${entry.name} `, 'm'));
  });

  it('--version and berth version agree', async () => {
    const a = await runBerth(['--version']);
    const b = await runBerth(['version']);
    assert.equal(a.code, 0);
    assert.match(a.stdout, /^berth \d+\.\d+\.\d+/);
    assert.equal(a.stdout, b.stdout);
  });

  it('a command --help shows its flags; an unknown flag or command is exit 2', async () => {
    const help = await runBerth(['system', 'status', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /--format text\|json/);
    const flag = await runBerth(['lrp', 'list', '--bogus']);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /Unknown option '--bogus'/);
    const command = await runBerth(['frobnicate']);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /unknown command "frobnicate"/);
    const sub = await runBerth(['lrp', 'frobnicate']);
    assert.equal(sub.code, 2);
    assert.match(sub.stderr, /unknown command "lrp frobnicate"/);
  });

  it('berth list --json is berth list --format json (once refused)', async () => {
    const r = await runBerth(['list', '--json', '--dir', '/nonexistent-berth-dir']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), '[]');
  });
});
