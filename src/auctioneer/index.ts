export {
  type AuctionBatch,
  type AuctionConfig,
  type AuctionResult,
  type AuctionWork,
  auction,
  type CellState,
  cellMatchesTags,
  guidHash,
  type LRPAuctionWork,
  lrpWorkFromStartRequest,
  type Placement,
  type PlacementFailure,
  pinnedCellReason,
  preferredZoneIndex,
  type TaskAuctionWork,
  taskWork,
} from './auction.js';
export type { AuctionBatchReport } from './auction-batch-report.js';
export {
  type AuctioneerConfig,
  AuctioneerService,
  type AuctioneerServiceOptions,
} from './auctioneer-service.js';
export { StopPusher, type StopPusherOptions } from './stop-pusher.js';
