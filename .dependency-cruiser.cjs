/**
 * Layer rules of DESIGN.md: lower layers never import upper ones, and other layers import a layer
 * only through its index.ts. `npm run deps` (and scripts/test) fail on a violation.
 */
const order = ['core', 'db', 'runtime', 'bbs', 'history', 'executor', 'rep', 'auctioneer', 'converger', 'registry', 'model', 'api', 'cli'];
// The router (issue 22) reads the BBS (core, bbs) and is run by the cli; it never imports the server
// (api) or anything between bbs and api, and nothing but the cli imports it.
const routerMayImport = ['core', 'bbs'];
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
/**
 * Modules `berth run` loads by value on its start-up path, imported directly so that it does not
 * load the rest of their layer (node:child_process and node:crypto stay off that path:
 * src/cli/pod-commands.test.ts checks). Everything else of another layer comes through its index.
 */
const startupEntries = [
  '^src/history/direct-pod-history[.]ts$',
  '^src/runtime/foreground-run[.]ts$',
  '^src/runtime/pod-dirs[.]ts$',
  '^src/runtime/pod-log[.]ts$',
  '^src/runtime/pod-log-reader[.]ts$',
  '^src/runtime/pod-runtime[.]ts$',
];
forbidden.push({
  name: 'router-imports-core-and-bbs-only',
  severity: 'error',
  comment: `the router layer imports only ${routerMayImport.join(', ')} (through their index)`,
  from: { path: '^src/router/', pathNot: '(\\.test\\.ts$)' },
  to: { path: '^src/[^/]+/', pathNot: [`^src/(router|${routerMayImport.join('|')})/`] },
});
forbidden.push({
  name: 'only-the-cli-imports-the-router',
  severity: 'error',
  comment: 'the router is its own process or a part the cli starts beside the server: only cli imports it',
  from: { path: '^src/', pathNot: ['^src/(router|cli|bench|testing)/', '\\.test\\.ts$'] },
  to: { path: '^src/router/' },
});
forbidden.push({
  name: 'other-layers-only-through-their-index',
  severity: 'error',
  comment:
    "a module of another layer is imported through that layer's index.ts (or a sub-layer's, such as " +
    'src/runtime/image/index.ts), never directly; `node scripts/fix-layer-imports.mjs` rewrites deep imports',
  // Tests, fixtures and benchmarks reach inside layers on purpose.
  from: { path: '^src/([^/]+)/', pathNot: '(\\.test\\.ts$|^src/testing/|^src/bench/)' },
  to: {
    path: '^src/[^/]+/',
    pathNot: ['^src/$1/', '^src/[^/]+/index[.]ts$', '^src/[^/]+/[^/]+/index[.]ts$', ...startupEntries],
  },
});
// The console (src/console) runs in the browser: from the server's layers it takes types only (the
// wire shapes), never code, and no server layer loads it.
forbidden.push({
  name: 'console-takes-only-types-from-the-server',
  severity: 'error',
  from: { path: '^src/console/', pathNot: '\\.test\\.ts$' },
  to: { path: '^src/(?!console/)', dependencyTypesNot: ['type-only'] },
});
forbidden.push({
  name: 'the-server-does-not-import-the-console',
  severity: 'error',
  from: { path: '^src/(?!console/)' },
  to: { path: '^src/console/' },
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
