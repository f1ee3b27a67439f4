import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  judgeMonitorRound,
  type MonitorRound,
  type MonitorSettings,
  type MonitorState,
  monitorSettings,
} from './monitor-policy.js';

/** The monitor's rules with an injected clock: every time below is a plain number of ms. */
const settings: MonitorSettings = monitorSettings(
  { tcp: 8080, timeout_ms: 1_000, period_ms: 2_000, failure_threshold: 3 },
  60,
  500,
);
const running: MonitorState = { running: true, failures: 0, createdAt: 0, startedAt: 0 };

/** A round due at `at` that ran on time and answered after `tookMs`. */
function round(at: number, healthy: boolean, tookMs = 10, lateMs = 0): MonitorRound {
  return { dueAt: at, ranAt: at + lateMs, answeredAt: at + lateMs + tookMs, healthy };
}

/** Plays rounds in order from `state`; returns each verdict's kind (with failures for a miss). */
function play(state: MonitorState, rounds: readonly MonitorRound[], using = settings): string[] {
  const kinds: string[] = [];
  for (const r of rounds) {
    const judged = judgeMonitorRound(using, state, r);
    state = judged.state;
    const v = judged.verdict;
    kinds.push(v.kind === 'miss' ? `miss ${v.failures}` : v.kind === 'ignored' ? `ignored ${v.why}` : v.kind);
  }
  return kinds;
}

describe('monitor policy', () => {
  it('defaults that ride out a loaded machine: timeout 5 s, period 5 s, 3 failures, no grace', () => {
    const d = monitorSettings({ tcp: 1 }, 60, 500);
    assert.deepEqual(
      [d.timeoutMs, d.periodMs, d.failureThreshold, d.startupGraceMs, d.startTimeoutMs],
      [5_000, 5_000, 3, 0, 60_000],
    );
  });

  it('the first pass makes it RUNNING; checks run every start-up interval before, every period after', () => {
    const starting: MonitorState = { running: false, failures: 0, createdAt: 0, startedAt: 0 };
    const failed = judgeMonitorRound(settings, starting, round(0, false));
    assert.equal(failed.verdict.kind, 'ignored');
    assert.equal(failed.nextInMs, 500);
    const passed = judgeMonitorRound(settings, failed.state, round(500, true));
    assert.equal(passed.verdict.kind, 'became-running');
    assert.equal(passed.nextInMs, 2_000);
    assert.equal(judgeMonitorRound(settings, passed.state, round(2_500, true)).verdict.kind, 'healthy');
  });

  it('a RUNNING instance is killed at the failure threshold of failures in a row; a pass resets the count', () => {
    assert.deepEqual(
      play(running, [
        round(0, false),
        round(2_000, false),
        round(4_000, true),
        round(6_000, false),
        round(8_000, false),
        round(10_000, false),
      ]),
      ['miss 1', 'miss 2', 'healthy', 'miss 1', 'miss 2', 'kill'],
    );
    const once = monitorSettings({ tcp: 1, failure_threshold: 1 }, 60, 500);
    const judged = judgeMonitorRound(once, running, round(0, false));
    assert.deepEqual(judged.verdict, { kind: 'kill', reason: 'the monitor failed' });
  });

  it('a check that timed out on time counts: a hung app is a failure', () => {
    assert.deepEqual(play(running, [round(0, false, 1_000), round(2_000, false, 1_000)]), [
      'miss 1',
      'miss 2',
    ]);
  });

  it('a starved cell: rounds whose timer fired late, or whose check came back long after its timeout, do not count', () => {
    // The timer fired 3 s late (more than a period late), or the 1 s check answered after 4 s.
    assert.deepEqual(
      play(running, [
        round(0, false, 10, 3_000),
        round(5_000, false, 4_000),
        round(11_000, false, 10, 2_500),
        round(16_000, false, 10, 1_900),
      ]),
      ['ignored late', 'ignored late', 'ignored late', 'miss 1'],
    );
    // Three on-time failures still kill, whatever late rounds came between them.
    assert.deepEqual(
      play(running, [
        round(0, false),
        round(2_000, false, 10, 5_000),
        round(9_000, false),
        round(11_000, false, 9_000),
        round(22_000, false),
      ]),
      ['miss 1', 'ignored late', 'miss 2', 'ignored late', 'kill'],
    );
  });

  it('every instance of a starved cell survives the same late round together', () => {
    // 50 instances whose checks all ran 4 s late in one round: none is even counted a miss.
    const verdicts = Array.from({ length: 50 }, () =>
      judgeMonitorRound(settings, { ...running, failures: 2 }, round(10_000, false, 1_000, 4_000)),
    );
    assert.ok(verdicts.every((j) => j.verdict.kind === 'ignored' && j.state.failures === 2));
  });

  it('start-up: killed only after the start timeout; the grace extends it and its failures never count', () => {
    const starting: MonitorState = { running: false, failures: 0, createdAt: 0, startedAt: 200 };
    const quick = monitorSettings({ tcp: 1 }, 1, 500);
    assert.deepEqual(play(starting, [round(500, false), round(1_500, false)], quick), [
      'ignored starting',
      'kill',
    ]);
    assert.deepEqual(judgeMonitorRound(quick, starting, round(1_500, false)).verdict, {
      kind: 'kill',
      reason: 'the monitor did not pass within 1s',
    });
    // Without a grace the timeout counts from the creation, however late the pod started.
    const lateStart: MonitorState = { ...starting, startedAt: 1_800 };
    assert.deepEqual(judgeMonitorRound(quick, lateStart, round(2_000, false)).verdict, {
      kind: 'kill',
      reason: 'the monitor did not pass within 1s',
    });
    // With 10 s of grace after the pod started, the same slow starter lives and becomes RUNNING.
    const graceful = monitorSettings({ tcp: 1, startup_grace_ms: 10_000 }, 1, 500);
    assert.deepEqual(
      play(
        starting,
        [round(500, false), round(1_500, false), round(9_000, false), round(9_500, true)],
        graceful,
      ),
      ['ignored grace', 'ignored grace', 'ignored grace', 'became-running'],
    );
    // Past the grace and the timeout: the message names the longer of the two.
    assert.deepEqual(judgeMonitorRound(graceful, starting, round(10_300, false)).verdict, {
      kind: 'kill',
      reason: 'the monitor did not pass within 10s',
    });
  });

  it('the grace covers failures of an instance that passed early and then fell over while warming up', () => {
    const early: MonitorState = { running: true, failures: 0, createdAt: 0, startedAt: 0 };
    const once = monitorSettings({ tcp: 1, failure_threshold: 1, startup_grace_ms: 5_000 }, 60, 500);
    assert.deepEqual(play(early, [round(1_000, false), round(4_000, false), round(6_000, false)], once), [
      'ignored grace',
      'ignored grace',
      'kill',
    ]);
  });
});
