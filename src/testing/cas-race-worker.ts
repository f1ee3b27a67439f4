/**
 * One writer of the CAS race test, run as its own OS process: increments the counter kept in a
 * DesiredLRP's annotation with compare-and-set until it reaches the target, and prints the tag
 * indices it won (JSON). Usage: node cas-race-worker.js DB PROCESS_GUID TARGET
 */
import { CasConflictError, openBbsStore } from '../bbs/index.js';

const [db, processGuid, targetText] = process.argv.slice(2);
if (!db || !processGuid || !targetText) throw new Error('usage: cas-race-worker DB PROCESS_GUID TARGET');
const target = Number(targetText);
const store = await openBbsStore(db, { poolSize: 2 });
const won: number[] = [];
let conflicts = 0;
for (;;) {
  const current = await store.getDesiredLRP({ process_guid: processGuid });
  const value = Number(current.annotation);
  if (value >= target) break;
  try {
    await store.updateDesiredLRP({
      process_guid: processGuid,
      expected: current.modification_tag,
      update: { annotation: String(value + 1) },
    });
    won.push(current.modification_tag.index);
  } catch (err) {
    if (!(err instanceof CasConflictError)) throw err;
    conflicts++;
  }
}
await store.close();
process.stdout.write(`${JSON.stringify({ won, conflicts })}\n`);
