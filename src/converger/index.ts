export * from './convergence-plan.js';
