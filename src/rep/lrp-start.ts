import { type ActualLRP, actualLrpKey, type ClaimActualLRPsRequest, type DesiredLRP } from '../bbs/index.js';
import { isBerthError, sleep } from '../core/index.js';
import type { ContainerRunSpec } from '../executor/index.js';
import type { KnownRecords } from './known-records.js';
import { actualRef } from './lrp-actions.js';
import type { RelationSync } from './relation-sync.js';
import type { RepLRPWork } from './rep-api.js';
import type { RepContext } from './rep-context.js';

/** A perform's claims go in requests of at most this many instances. */
const claimBatchSize = 500;

/**
 * The pauses before a claim request that failed is sent again. A claim is idempotent (an instance
 * this cell already claimed is claimed again), and a request that timed out on a busy server has
 * often landed: giving the instances back at once would have every pass then unclaim them and
 * the auction place them anew, more load on the server that was too busy to answer.
 */
const claimRetryDelaysMs = [250, 1_000] as const;

/** An instance the auction handed this cell, with the container reserved for it. */
export interface ReservedLRP {
  readonly guid: string;
  readonly lrp: RepLRPWork;
}

/**
 * Seed: "the Rep creates a container reservation, then CAS the ActualLRP to CLAIMED, then starts
 * running the container". The reservations one perform made are claimed in requests of up to
 * `claimBatchSize` (`claimActualLRPs`): each instance is claimed only while UNCLAIMED (the state a
 * read-then-CAS checked), a refused one's reservation goes, and the claim's answer carries the
 * definitions the claimed instances run. Runs in the background; failures are logged.
 */
export function startReserved(
  ctx: RepContext,
  known: KnownRecords,
  relations: RelationSync | undefined,
  reserved: readonly ReservedLRP[],
): void {
  for (let at = 0; at < reserved.length; at += claimBatchSize) {
    const batch = reserved.slice(at, at + claimBatchSize);
    void claimAndRun(ctx, known, relations, batch).catch((err) =>
      ctx.log(`start ${batch.length} instances: ${String(err)}`),
    );
  }
}

async function claimAndRun(
  ctx: RepContext,
  known: KnownRecords,
  relations: RelationSync | undefined,
  reserved: readonly ReservedLRP[],
): Promise<void> {
  const { executor, cellId } = ctx;
  let claimed: ReadonlyMap<string, ActualLRP>;
  let definitions: ReadonlyMap<string, DesiredLRP>;
  try {
    const result = await claimWithRetries(ctx, {
      cell_id: cellId,
      claims: reserved.map(({ guid, lrp }) => ({ ...actualRef(lrp), instance_guid: guid })),
    });
    claimed = new Map(result.claimed.map((a) => [a.instance_guid, a]));
    definitions = new Map(result.desired_lrps.map((d) => [d.process_guid, d]));
  } catch (err) {
    // The instances stay UNCLAIMED for the converger to offer again. Had the claims landed
    // before the failure, the next pass finds them "No Container / CLAIMED by A" and gives
    // them back.
    await Promise.all(reserved.map(({ guid }) => executor.deleteContainer(guid)));
    throw err;
  }
  await Promise.all(
    reserved.map(async ({ guid, lrp }) => {
      const actual = claimed.get(guid);
      const container = executor.get(guid);
      if (!actual || !container) return executor.deleteContainer(guid);
      known.wrote(container, actual);
      const desired = definitions.get(lrp.process_guid);
      return runClaimed(ctx, relations, guid, lrp, desired).catch((err) =>
        ctx.log(`start ${actualLrpKey(lrp)}: ${String(err)}`),
      );
    }),
  );
}

/** `claimActualLRPs`, sent again after a failure that may pass (a timeout, the server away). */
async function claimWithRetries(
  ctx: RepContext,
  req: ClaimActualLRPsRequest,
): Promise<Awaited<ReturnType<RepContext['bbs']['claimActualLRPs']>>> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await ctx.bbs.claimActualLRPs(req);
    } catch (err) {
      const delayMs = claimRetryDelaysMs[attempt];
      // A refusal the request itself earned (invalid, unauthorized) is final.
      if (delayMs === undefined || (isBerthError(err) && !err.retryable && err.code !== 'internal'))
        throw err;
      ctx.log(`claim ${req.claims.length} instances: ${String(err)}; again in ${delayMs} ms`);
      await sleep(delayMs);
    }
  }
}

/** Runs a claimed instance's container; `desired` absent: its LRP is gone, so is the reservation. */
async function runClaimed(
  ctx: RepContext,
  relations: RelationSync | undefined,
  guid: string,
  lrp: RepLRPWork,
  desired: DesiredLRP | undefined,
): Promise<void> {
  const { executor } = ctx;
  try {
    if (!desired) {
      await executor.deleteContainer(guid);
      return;
    }
    await executor.run(guid, runSpecOfLRP(desired, await relations?.startSpec(lrp.process_guid, lrp.index)));
  } catch (err) {
    // Claimed but never started (the start refused before it began): a reservation left
    // RESERVED keeps the record CLAIMED for good ("RESERVED / ANY: Do Nothing"). Without it the
    // next pass sees "No Container / CLAIMED by A" and gives the instance back.
    if (executor.get(guid)?.state === 'RESERVED') await executor.deleteContainer(guid);
    throw err;
  }
}

function runSpecOfLRP(
  desired: DesiredLRP,
  relations?: { env: Record<string, string>; files: Record<string, string> },
): ContainerRunSpec {
  return {
    image: desired.image,
    ...(desired.command ? { command: desired.command } : {}),
    // The DesiredLRP's own variables win over the relation snapshot.
    env: relations ? { ...relations.env, ...desired.env } : desired.env,
    ...(relations ? { shared_files: relations.files } : {}),
    ports: desired.ports,
    ...(desired.monitor ? { monitor: desired.monitor } : {}),
    start_timeout_s: desired.start_timeout_s,
    ...(desired.volumes ? { volumes: desired.volumes } : {}),
    ...(desired.sidecars ? { sidecars: desired.sidecars } : {}),
  };
}
