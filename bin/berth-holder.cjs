'use strict';
// The detached stage-1 holder's entry (PodRuntime.startDetached spawns it as
// `node bin/berth-holder.cjs DATA_DIR UUID rm|keep`): runs the one-file bundle
// dist/runtime/stage1-holder.bundle.cjs, compiled with V8's code cache (cached-bundle.cjs). The
// holder may hold its pod for days: its cache is written half a second after its start, which
// covers the start, the part every container start waits for.
const { join } = require('node:path');
const { runBundle } = require('./cached-bundle.cjs');

runBundle(join(__dirname, '..', 'dist', 'runtime', 'stage1-holder.bundle.cjs'), { cacheAfterMs: 500 });
