import { type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { BerthError } from '../core/index.js';
import type { SystemServiceRow } from './sql-model-schema.js';
import type { JobDefinition, ServiceDefinition, SystemDefinition } from './system-definition.js';

interface DeployedRecordBase {
  readonly system: string;
  readonly path: string;
  readonly version: string;
  /** The DesiredLRP (a service) or task (a job) running the current version. */
  readonly process_guid: string;
  /** During a rolling update: the previous version's DesiredLRP, removed when the update is done. */
  readonly old_process_guid: string | null;
}

/** A deployed service: its model service and the definition it runs. */
export interface ServiceRecord extends DeployedRecordBase {
  readonly kind: 'service';
  /** The model service name (`system:path`). */
  readonly model_name: string;
  readonly spec: ServiceDefinition;
}

/** A deployed job: a task, with no model entity (its `model_name` is empty). */
export interface JobRecord extends DeployedRecordBase {
  readonly kind: 'job';
  readonly model_name: string;
  readonly spec: JobDefinition;
}

/** A row of a system's deployed services and jobs, keyed on `kind` so its spec is typed. */
export type SystemServiceRecord = ServiceRecord | JobRecord;

/** Whether the row is a sidecar service (one unit per principal unit, on its principal's cell). */
export function isSidecarRecord(record: SystemServiceRecord): boolean {
  return record.kind === 'service' && record.spec.subordinate_to !== undefined;
}

// The shapes of what berth itself stored (the normalized definitions), checked on the way out of
// the database. Shape only: bounds are today's rules, and a row an older berth wrote under looser
// ones must still be readable (status, teardown); `storedDefinitionProblems` refuses to execute it.
const Strings = Type.Array(Type.String());
const StringMap = Type.Record(Type.String(), Type.String());
const MonitorShape = Type.Union([
  Type.Object({ tcp: Type.Number() }),
  Type.Object({ http: Type.Object({ port: Type.Number(), path: Type.String() }) }),
  Type.Object({ command: Strings }),
]);
const jobFields = {
  path: Type.String(),
  image: Type.String(),
  command: Type.Optional(Strings),
  env: StringMap,
  memory_mb: Type.Number(),
  disk_mb: Type.Number(),
  annotation: Type.String(),
};
const StoredJob = Type.Object(jobFields);
/** Only the sealed form of a secret is ever stored; anything else in a row is unreadable. */
const SealedShape = Type.Object({ sealed: Type.String(), digest: Type.String() });
const StoredService = Type.Object({
  ...jobFields,
  secrets: Type.Optional(Type.Record(Type.String(), SealedShape)),
  instances: Type.Number(),
  ports: Type.Array(Type.Number()),
  monitor: Type.Optional(MonitorShape),
  routes: Type.Record(Type.String(), Type.Unknown()),
  relations: Strings,
  subordinate_to: Type.Optional(Type.String()),
});
const StoredSystem = Type.Object({
  system: Type.String(),
  services: Type.Array(StoredService),
  jobs: Type.Array(StoredJob),
});

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    // catch-all: unparsable JSON reads as absent; the caller's check names the row.
    return undefined;
  }
}

function unreadable(row: SystemServiceRow, schema: TSchema, spec: unknown): BerthError {
  const first = spec === undefined ? 'not JSON' : [...Value.Errors(schema, spec)][0];
  const why = typeof first === 'string' ? first : `${first?.path || '/'} ${first?.message ?? ''}`;
  return new BerthError('internal', `stored ${row.kind} ${row.path} of ${row.system} is unreadable: ${why}`, {
    system: row.system,
    path: row.path,
  });
}

/** A stored row → its typed record; a row berth did not write throws an `internal` error naming it. */
export function parseServiceRow(row: SystemServiceRow): SystemServiceRecord {
  const spec = parseJson(row.spec);
  const base = {
    system: row.system,
    path: row.path,
    model_name: row.model_name,
    version: row.version,
    process_guid: row.process_guid,
    old_process_guid: row.old_process_guid,
  };
  if (row.kind === 'service') {
    if (!Value.Check(StoredService, spec)) throw unreadable(row, StoredService, spec);
    return { ...base, kind: 'service', spec };
  }
  if (row.kind === 'job') {
    if (!Value.Check(StoredJob, spec)) throw unreadable(row, StoredJob, spec);
    return { ...base, kind: 'job', spec };
  }
  throw new BerthError('internal', `stored row ${row.path} of ${row.system} has unknown kind ${row.kind}`);
}

export function serviceRowOf(record: SystemServiceRecord): SystemServiceRow {
  return { ...record, spec: JSON.stringify(record.spec) };
}

/** An accepted deploy's stored definition; null when unreadable (the deploy then fails saying so). */
export function parseStoredDefinition(text: string): SystemDefinition | null {
  const value = parseJson(text);
  return Value.Check(StoredSystem, value) ? value : null;
}
