/** What one batch did, for logs, metrics and tests. */
export interface AuctionBatchReport {
  /** Start requests taken from the outboxes (LRP indices + tasks). */
  readonly taken: number;
  /** Work in the batch: taken plus retried. */
  readonly auctioned: number;
  /** Work a rep accepted. */
  readonly placed: number;
  /** Work that will be tried again next batch (refused by its rep, unplaceable, cell unreachable). */
  readonly retrying: number;
  /** Work given up after `retryBatches` (the converger re-emits LRPs; the outbox redelivers tasks). */
  readonly dropped: number;
  /** Placement errors written on ActualLRPs. */
  readonly placementErrors: number;
  /** Live cells whose state could not be fetched this round. */
  readonly unreachableCells: number;
  /** Live cells asked for their state this round (the others' kept states served). */
  readonly statesRead: number;
  /** Where the round's time went: reading cell states, the auction itself, the reps' performs. */
  readonly statesMs: number;
  readonly auctionMs: number;
  readonly performMs: number;
  /** Cells sent work, and how long the median and the slowest took to answer. */
  readonly performs: number;
  readonly performP50Ms: number;
  readonly performMaxMs: number;
  readonly durationMs: number;
}

/** A round that placed nothing and read no state. */
export const emptyRound = {
  placed: 0,
  dropped: 0,
  placementErrors: 0,
  unreachableCells: 0,
  statesRead: 0,
  statesMs: 0,
  auctionMs: 0,
  performMs: 0,
  performs: 0,
  performP50Ms: 0,
  performMaxMs: 0,
};

/** What the auction round itself (after the take) reports. */
export type AuctionRound = typeof emptyRound;

/** The perform figures of a round: cells sent work, and the median and slowest answers' times. */
export function performFigures(
  performs: number,
  answeredInMs: readonly number[],
): Pick<AuctionRound, 'performs' | 'performP50Ms' | 'performMaxMs'> {
  const sorted = [...answeredInMs].sort((a, b) => a - b);
  return {
    performs,
    performP50Ms: sorted[Math.floor(sorted.length / 2)] ?? 0,
    performMaxMs: sorted.at(-1) ?? 0,
  };
}
