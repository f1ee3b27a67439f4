export * from './bbs-types.js';
