import { type TSchema, Type } from '@sinclair/typebox';
import {
  Argv,
  DiskMb,
  DurationMs,
  EnvMap,
  ImageRef,
  InstanceIndex,
  Instances,
  Int32,
  limits,
  MemoryMb,
  Message,
  Name,
  NameOrEmpty,
  PlacementTags,
  Routes as RoutesSchema,
  Url,
} from '../../core/index.js';
import { PodSidecarsSchema } from '../pod-sidecars.js';
import { OutputsMaxBytesSchema, TaskOutputsSchema } from '../task-output-types.js';
import { VolumeMountsSchema } from '../volume-mounts.js';

/**
 * TypeBox schemas of the BBS's JSON: they validate requests (a malformed one is a 400 that names
 * the field) and generate `/openapi.json`. Request bodies refuse unknown fields so a typo
 * (`instance` for `instances`) is an error, not a silently ignored field. Every count, size and
 * length is bounded (src/core/limits.ts, docs/limits.md).
 */
const strict = { additionalProperties: false } as const;

export const ModificationTagSchema = Type.Object(
  { epoch: Name(), index: Int32() },
  { ...strict, $id: 'ModificationTag' },
);

/**
 * A monitor's timing (monitor-timing.ts). Any integer passes here: a bound broken inside the union
 * of check kinds would be reported as "monitor is invalid"; the store checks the bounds and names
 * the field (`monitor.period_ms`).
 */
export const monitorTimingProperties = {
  timeout_ms: Type.Optional(Type.Integer({ description: 'ms one check may take; 1–300000, default 5000' })),
  period_ms: Type.Optional(
    Type.Integer({ description: 'ms between checks once RUNNING; 100–3600000, default 5000' }),
  ),
  failure_threshold: Type.Optional(
    Type.Integer({ description: 'failed checks in a row that kill a RUNNING instance; 1–100, default 3' }),
  ),
  startup_grace_ms: Type.Optional(
    Type.Integer({ description: 'ms after the start when failed checks do not count; 0–3600000, default 0' }),
  ),
};

export const MonitorSchema = Type.Union(
  [
    Type.Object({ tcp: Type.Integer({ minimum: 1, maximum: 65535 }), ...monitorTimingProperties }, strict),
    Type.Object(
      {
        http: Type.Object(
          {
            port: Type.Integer({ minimum: 1, maximum: 65535 }),
            path: Type.Optional(Url({ description: 'default /' })),
          },
          strict,
        ),
        ...monitorTimingProperties,
      },
      strict,
    ),
    Type.Object({ command: Argv(undefined, { minItems: 1 }), ...monitorTimingProperties }, strict),
  ],
  { description: '{"tcp": PORT}, {"http": {"port": P, "path": "/"}} or {"command": [argv]}' },
);

const guid = (description: string) => Name({ description });
const StringMap = EnvMap();
const Routes = RoutesSchema();
const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const Annotation = Type.String({ maxLength: limits.maxAnnotationLength });

export const DesiredLRPDefinitionSchema = Type.Object(
  {
    process_guid: guid('Unique id of the LRP'),
    domain: Name(),
    instances: Instances(),
    image: ImageRef(),
    command: Type.Optional(Argv(undefined, { description: 'The whole argv' })),
    env: Type.Optional(StringMap),
    memory_mb: Type.Optional(MemoryMb()),
    disk_mb: Type.Optional(DiskMb()),
    ports: Type.Optional(Type.Array(Port, { description: 'Container ports', maxItems: limits.maxPorts })),
    routes: Type.Optional(Routes),
    annotation: Type.Optional(Annotation),
    monitor: Type.Optional(MonitorSchema),
    start_timeout_s: Type.Optional(Type.Integer({ minimum: 0, maximum: limits.maxTimeoutS })),
    placement_tags: Type.Optional(PlacementTags()),
    volumes: Type.Optional(VolumeMountsSchema),
    sidecars: Type.Optional(PodSidecarsSchema),
  },
  strict,
);

export const DesiredLRPUpdateSchema = Type.Object(
  {
    instances: Type.Optional(Instances()),
    routes: Type.Optional(Routes),
    annotation: Type.Optional(Annotation),
  },
  { ...strict, description: 'Only instances, routes and annotation change in place' },
);

export const PortMappingSchema = Type.Object({ container_port: Port, host_port: Port }, strict);
export const InstanceKeySchema = Type.Object({ instance_guid: Name(), cell_id: Name() }, strict);
export const NetInfoSchema = Type.Object(
  { address: NameOrEmpty(), ports: Type.Array(PortMappingSchema, { maxItems: limits.maxPorts }) },
  strict,
);

export const TaskDefinitionSchema = Type.Object(
  {
    task_guid: guid('Unique id of the task'),
    domain: Name(),
    image: ImageRef(),
    command: Type.Optional(Argv()),
    env: Type.Optional(StringMap),
    memory_mb: Type.Optional(MemoryMb()),
    disk_mb: Type.Optional(DiskMb()),
    result_file: Type.Optional(Url()),
    completion_callback_url: Type.Optional(Url()),
    placement_tags: Type.Optional(PlacementTags()),
    outputs: Type.Optional(TaskOutputsSchema),
    outputs_max_bytes: Type.Optional(OutputsMaxBytesSchema),
    volumes: Type.Optional(VolumeMountsSchema),
  },
  strict,
);

export const ErrorSchema = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  { description: 'Every error: a stable code, a message, and data about it' },
);

// ---- request bodies of the internal (component) routes, one per BbsStore operation

const Ref = { process_guid: guid('process_guid'), index: InstanceIndex() };
const Cas = { ...Ref, expected: ModificationTagSchema };
const TaskCas = { task_guid: guid('task_guid'), expected: ModificationTagSchema };
const Take = {
  limit: Type.Integer({ minimum: 1, maximum: limits.maxBatchItems }),
  visibility_ms: DurationMs(),
};
const Ids = Type.Object(
  {
    ids: Type.Array(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }), {
      maxItems: limits.maxBatchItems,
    }),
  },
  strict,
);
const Empty = Type.Object({}, strict);
/** The store's keyset paging (ListPage): the public routes' `limit` + `cursor`, decoded. */
function pageOf<K extends TSchema>(key: K) {
  return {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: limits.maxInt32 })),
    after: Type.Optional(key),
  };
}

/** An ISO-8601 time: the store compares and parses it, so it must be one. */
const Timestamp = Type.String({ minLength: 1, maxLength: 64, format: 'date-time' });

export const operationBodies = {
  desireLRP: DesiredLRPDefinitionSchema,
  getDesiredLRP: Type.Object({ process_guid: guid('process_guid') }, strict),
  listDesiredLRPs: Type.Object({ domain: Type.Optional(NameOrEmpty()), ...pageOf(Name()) }, strict),
  updateDesiredLRP: Type.Object(
    {
      process_guid: guid('process_guid'),
      expected: Type.Optional(ModificationTagSchema),
      update: DesiredLRPUpdateSchema,
    },
    strict,
  ),
  removeDesiredLRP: Type.Object(
    { process_guid: guid('process_guid'), expected: Type.Optional(ModificationTagSchema) },
    strict,
  ),
  listActualLRPs: Type.Object(
    {
      process_guid: Type.Optional(NameOrEmpty()),
      domain: Type.Optional(NameOrEmpty()),
      cell_id: Type.Optional(NameOrEmpty()),
      ...pageOf(
        Type.Object(
          {
            process_guid: Name(),
            index: Type.Integer({ minimum: 0, maximum: limits.maxInstances }),
            evacuating: Type.Boolean(),
          },
          strict,
        ),
      ),
    },
    strict,
  ),
  getActualLRP: Type.Object(Ref, strict),
  createActualLRP: Type.Object(Ref, strict),
  claimActualLRP: Type.Object({ ...Cas, instance_key: InstanceKeySchema }, strict),
  claimActualLRPs: Type.Object(
    {
      cell_id: guid('cell_id'),
      claims: Type.Array(Type.Object({ ...Ref, instance_guid: guid('instance_guid') }, strict), {
        maxItems: limits.maxBatchItems,
      }),
    },
    strict,
  ),
  startActualLRP: Type.Object(
    {
      ...Ref,
      expected: Type.Union([ModificationTagSchema, Type.Null()]),
      domain: Type.Optional(NameOrEmpty()),
      instance_key: InstanceKeySchema,
      net_info: NetInfoSchema,
    },
    strict,
  ),
  startActualLRPs: Type.Object(
    {
      starts: Type.Array(
        Type.Object(
          {
            ...Ref,
            expected: ModificationTagSchema,
            domain: Type.Optional(NameOrEmpty()),
            instance_key: InstanceKeySchema,
            net_info: NetInfoSchema,
          },
          strict,
        ),
        { maxItems: limits.maxBatchItems },
      ),
    },
    strict,
  ),
  crashActualLRP: Type.Object(
    {
      ...Ref,
      expected: Type.Union([ModificationTagSchema, Type.Null()]),
      domain: Type.Optional(NameOrEmpty()),
      instance_key: InstanceKeySchema,
      state: Type.Union([Type.Literal('UNCLAIMED'), Type.Literal('CRASHED')]),
      crash_count: Int32(),
      last_crashed_at: Timestamp,
      crash_reason: Message(),
    },
    strict,
  ),
  failActualLRP: Type.Object(
    { ...Cas, placement_error: Message(), instance_key: Type.Optional(InstanceKeySchema) },
    strict,
  ),
  unclaimActualLRP: Type.Object(Cas, strict),
  unclaimActualLRPs: Type.Object(
    { unclaims: Type.Array(Type.Object(Cas, strict), { maxItems: limits.maxBatchItems }) },
    strict,
  ),
  removeActualLRP: Type.Object({ ...Cas, instance_key: Type.Optional(InstanceKeySchema) }, strict),
  retireActualLRP: Type.Object(Cas, strict),
  evacuateRunningActualLRP: Type.Object(
    { ...Cas, instance_key: InstanceKeySchema, net_info: NetInfoSchema },
    strict,
  ),
  removeEvacuatingActualLRP: Type.Object({ ...Cas, instance_key: InstanceKeySchema }, strict),
  takeStartRequests: Type.Object(Take, strict),
  ackStartRequests: Ids,
  takeTaskStartRequests: Type.Object(Take, strict),
  ackTaskStartRequests: Ids,
  takeStopRequests: Type.Object({ ...Take, cell_id: Type.Optional(NameOrEmpty()) }, strict),
  ackStopRequests: Ids,
  cellPass: Type.Object(
    {
      cell_id: Name(),
      stop_limit: Take.limit,
      visibility_ms: Take.visibility_ms,
      // A digest the store made (`cellPassDigest`, base64url of a sha256) that the rep sends back.
      known_digest: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$' })),
    },
    strict,
  ),
  desireTask: TaskDefinitionSchema,
  getTask: Type.Object({ task_guid: guid('task_guid') }, strict),
  listTasks: Type.Object(
    {
      domain: Type.Optional(NameOrEmpty()),
      cell_id: Type.Optional(NameOrEmpty()),
      state: Type.Optional(
        Type.Union(['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'].map((s) => Type.Literal(s))),
      ),
      ...pageOf(Type.String()),
    },
    strict,
  ),
  startTask: Type.Object({ ...TaskCas, cell_id: Name() }, strict),
  completeTask: Type.Object(
    {
      ...TaskCas,
      cell_id: Name(),
      failed: Type.Boolean(),
      failure_reason: Message(),
      result: Message(),
    },
    strict,
  ),
  failTask: Type.Object({ ...TaskCas, failure_reason: Message() }, strict),
  cancelTask: Type.Object(
    { task_guid: guid('task_guid'), expected: Type.Optional(ModificationTagSchema) },
    strict,
  ),
  resolvingTask: Type.Object(TaskCas, strict),
  demoteResolvingTask: Type.Object(TaskCas, strict),
  deleteTask: Type.Object(TaskCas, strict),
  upsertDomain: Type.Object({ domain: Name(), ttl_ms: DurationMs(), owner: Type.Optional(Name()) }, strict),
  listDomains: Empty,
  listVolumePins: Type.Object({ domain: Type.Optional(Name()), cell_id: Type.Optional(Name()) }, strict),
  releaseVolumePins: Type.Object(
    {
      domain: Name(),
      volume: Type.Optional(Name()),
      index: Type.Optional(Type.Integer({ minimum: 0, maximum: limits.maxInstances })),
    },
    strict,
  ),
  ownerOf: Type.Union([
    Type.Object({ domain: Name() }, strict),
    Type.Object({ process_guid: Name() }, strict),
    Type.Object({ task_guid: Name() }, strict),
  ]),
  heartbeatCell: Type.Object(
    {
      presence: Type.Object(
        {
          cell_id: Name(),
          zone: NameOrEmpty(),
          capacity: Type.Object(
            {
              // A whole machine's: bounded only by what the stored JSON and the auction hold.
              memory_mb: Int32(),
              disk_mb: Int32(),
              containers: Int32(),
            },
            strict,
          ),
          rep_url: Url(),
          placement_tags: PlacementTags(),
          model_agent: Type.Optional(Type.Boolean()),
          // What `startCell` sends: 32 random bytes, base64url (43 characters).
          rep_token: Type.Optional(
            Type.String({ minLength: 32, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' }),
          ),
        },
        strict,
      ),
      ttl_ms: DurationMs(1),
    },
    strict,
  ),
  listCells: Empty,
  removeCell: Type.Object({ cell_id: Name() }, strict),
  expireCells: Empty,
  acquireLease: Type.Object(
    {
      name: Name(),
      holder: Name(),
      ttl_ms: DurationMs(1),
    },
    strict,
  ),
  releaseLease: Type.Object({ name: Name(), holder: Name() }, strict),
  listLeases: Empty,
  readSnapshot: Empty,
  readConvergenceSnapshot: Empty,
  readEvents: Type.Object(
    {
      after: Type.Optional(NameOrEmpty()),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: limits.maxBatchItems })),
    },
    strict,
  ),
  headEventId: Empty,
  countRecords: Empty,
  pruneEvents: Type.Object({ before: Timestamp }, strict),
} satisfies Record<string, TSchema>;
