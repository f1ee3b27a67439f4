export * from './auction.js';
export * from './auctioneer-service.js';
export * from './service-support.js';
