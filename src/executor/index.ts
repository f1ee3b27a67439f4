export * from './container-state.js';
