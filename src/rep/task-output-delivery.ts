import { mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Task, taskOutputLimits } from '../bbs/index.js';
import { BerthError, isNotFound } from '../core/index.js';
import { type CollectedOutputs, collectTaskOutputs, OutputCollectionError } from '../executor/index.js';
import type { RepContext } from './rep-context.js';

/** Refusals that will not change on a retry: they fail the task instead of being retried. */
const finalUploadCodes: ReadonlySet<string> = new Set(['resource_exhausted', 'invalid_argument']);

/**
 * Seed 001's "upload the output files", on the cell before the task completes: collects the task's
 * declared outputs from its finished container (still on disk: the container is deleted after
 * completion) and uploads the archive, so a COMPLETED task's outputs are already downloadable.
 * Returns why the outputs could not be kept ('' when they were, or none were declared): the task
 * then completes failed with that reason. An upload that may succeed later (server unreachable,
 * the task moved meanwhile) throws, and the next reconcile pass tries again.
 */
export async function deliverTaskOutputs(ctx: RepContext, task: Task): Promise<string> {
  const outputs = task.outputs ?? [];
  if (outputs.length === 0) return '';
  if (!ctx.taskOutputs) return 'Cannot collect outputs: this cell has no server to upload them to';
  const dir = join(ctx.executor.runtime.dataDir, 'task-outputs');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const archive = join(dir, `${task.task_guid.replace(/[^A-Za-z0-9_.-]/g, '_')}.tar.gz`);
  try {
    // The container's root, while its pod is still on disk; none when its launch failed (nothing
    // ran, nothing to collect: the task already fails with that reason).
    let layers: string[] | undefined;
    try {
      layers = ctx.executor.rootLayers(task.task_guid);
    } catch (err) {
      if (isNotFound(err)) return "Cannot collect outputs: the container's files are gone";
      throw err;
    }
    if (!layers) return '';
    let collected: CollectedOutputs;
    try {
      collected = await collectTaskOutputs(
        layers,
        outputs,
        {
          maxBytes: task.outputs_max_bytes ?? taskOutputLimits.defaultBytes,
          maxEntries: taskOutputLimits.maxEntries,
        },
        archive,
      );
    } catch (err) {
      if (err instanceof OutputCollectionError) return err.message;
      throw err;
    }
    try {
      await ctx.taskOutputs.upload(task.task_guid, ctx.cellId, collected.archive, collected.sha256);
    } catch (err) {
      if (err instanceof BerthError && finalUploadCodes.has(err.code))
        return `Cannot upload outputs: ${err.message}`;
      throw err;
    }
    ctx.log(
      `task ${task.task_guid}: outputs uploaded (${collected.entries} entries, ${collected.contentBytes} bytes, archive ${collected.size} bytes)`,
    );
    return '';
  } finally {
    await rm(archive, { force: true });
  }
}
