export * from './auction.js';
export * from './auctioneer-service.js';
