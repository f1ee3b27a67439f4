export * from './convergence-plan.js';
export * from './converger-service.js';
