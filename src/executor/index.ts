export * from './container-state.js';
export * from './executor.js';
