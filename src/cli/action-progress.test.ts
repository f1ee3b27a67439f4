import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { progressBar, progressLine, progressWithBar } from './action-progress.js';

describe('deploy --wait progress', () => {
  const deploy = {
    kind: 'deploy' as const,
    services_ready: 1,
    services_desired: 2,
    instances_ready: 3,
    instances_desired: 4,
    jobs_completed: 0,
    jobs_desired: 1,
    waiting_on: ['/web: 1/2 instances running', 'job /migrate running'],
  };

  it('a plain line: services and instances ready of desired, jobs, and the first thing waited for', () =>
    assert.equal(
      progressLine(deploy),
      'services 1/2 ready, instances 3/4 running, jobs 0/1 completed; waiting on /web: 1/2 instances running (+1 more)',
    ));

  it('on a TTY the line follows a bar of instances and jobs done', () => {
    assert.equal(progressWithBar(deploy), `${progressBar(3, 5)} ${progressLine(deploy)}`);
    assert.equal(progressBar(3, 5), `[${'#'.repeat(14)}${'.'.repeat(10)}]`);
    assert.equal(progressBar(0, 0), `[${'#'.repeat(24)}]`, 'nothing to wait for is done');
  });

  it('a teardown says what is left', () =>
    assert.equal(
      progressLine({ kind: 'teardown', services: 1, desired_lrps: 0, instances: 2, tasks: 0 }),
      'left: 1 service(s), 0 DesiredLRP(s), 2 instance(s), 0 task(s)',
    ));
});
