export * from './berth-error.js';
export * from './duration.js';
