import type { ActionProgress } from '../model/index.js';

const barWidth = 24;

/** A fixed-width bar of done/total, `[#########...............]`. */
export function progressBar(done: number, total: number): string {
  const filled = total <= 0 ? barWidth : Math.min(barWidth, Math.round((done / total) * barWidth));
  return `[${'#'.repeat(filled)}${'.'.repeat(barWidth - filled)}]`;
}

/**
 * One line of how far an action got: a deploy's services and instances ready of desired (and
 * jobs completed), then the first thing it waits for; a teardown's remains.
 */
export function progressLine(progress: ActionProgress): string {
  if (progress.kind === 'teardown') {
    const { services, desired_lrps, instances, tasks } = progress;
    return `left: ${services} service(s), ${desired_lrps} DesiredLRP(s), ${instances} instance(s), ${tasks} task(s)`;
  }
  const p = progress;
  const jobs = p.jobs_desired > 0 ? `, jobs ${p.jobs_completed}/${p.jobs_desired} completed` : '';
  const first = p.waiting_on[0];
  const more = p.waiting_on.length > 1 ? ` (+${p.waiting_on.length - 1} more)` : '';
  return `services ${p.services_ready}/${p.services_desired} ready, instances ${p.instances_ready}/${p.instances_desired} running${jobs}${first ? `; waiting on ${first}${more}` : ''}`;
}

/** The bar a TTY shows before the line: instances (and jobs) done of desired; a teardown shows none. */
export function progressWithBar(progress: ActionProgress): string {
  if (progress.kind === 'teardown') return progressLine(progress);
  const done = progress.instances_ready + progress.jobs_completed;
  const total = progress.instances_desired + progress.jobs_desired;
  return `${progressBar(done, total)} ${progressLine(progress)}`;
}
