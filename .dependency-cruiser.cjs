/**
 * Layer rules of DESIGN.md: lower layers never import upper ones, and other layers import a layer
 * only through its index.ts. `npm run deps` (and scripts/test) fail on a violation.
 */
const order = ['core', 'db', 'runtime', 'bbs', 'history', 'executor', 'rep', 'auctioneer', 'converger', 'registry', 'model', 'api', 'cli'];
const forbidden = [];
order.forEach((layer, i) => {
  const upper = order.slice(i + 1);
  if (upper.length === 0) return;
  forbidden.push({
    name: `${layer}-is-below-${upper.join('-')}`.slice(0, 120),
    severity: 'error',
    comment: `${layer} is a lower layer and must not import ${upper.join(', ')}`,
    from: { path: `^src/${layer}/` },
    to: { path: `^src/(${upper.join('|')})/` },
  });
});
forbidden.push({
  name: 'no-circular',
  severity: 'error',
  from: {},
  to: { circular: true },
});
forbidden.push({
  name: 'production-code-does-not-import-tests',
  severity: 'error',
  // Benchmarks, like tests, may start fixtures (PostgreSQL, busybox rootfs) from src/testing/.
  from: { path: '^src/', pathNot: '(\\.test\\.ts$|^src/testing/|^src/bench/)' },
  to: { path: '(\\.test\\.ts$|^src/testing/)' },
});
module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
