/**
 * The route's host of `npm run bench router`, shared by the bench and its parts. Its own module:
 * router-bench-parts.ts is a process entry (it starts servers when loaded), never an import.
 */
export const benchHost = 'web.bench.berth.localhost';
