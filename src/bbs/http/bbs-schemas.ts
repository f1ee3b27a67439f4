import { type TSchema, Type } from '@sinclair/typebox';

/**
 * TypeBox schemas of the BBS's JSON: they validate requests (a malformed one is a 400 that names
 * the field) and generate `/openapi.json`. Request bodies refuse unknown fields so a typo
 * (`instance` for `instances`) is an error, not a silently ignored field.
 */
const strict = { additionalProperties: false } as const;

export const ModificationTagSchema = Type.Object(
  { epoch: Type.String({ minLength: 1 }), index: Type.Integer({ minimum: 0 }) },
  { ...strict, $id: 'ModificationTag' },
);

export const MonitorSchema = Type.Union(
  [
    Type.Object({ tcp: Type.Integer({ minimum: 1, maximum: 65535 }) }, strict),
    Type.Object(
      {
        http: Type.Object(
          {
            port: Type.Integer({ minimum: 1, maximum: 65535 }),
            path: Type.Optional(Type.String({ description: 'default /' })),
          },
          strict,
        ),
      },
      strict,
    ),
    Type.Object({ command: Type.Array(Type.String(), { minItems: 1 }) }, strict),
  ],
  { description: '{"tcp": PORT}, {"http": {"port": P, "path": "/"}} or {"command": [argv]}' },
);

const guid = (description: string) => Type.String({ minLength: 1, maxLength: 255, description });
const StringMap = Type.Record(Type.String(), Type.String());
const Routes = Type.Record(Type.String(), Type.Unknown());
const Port = Type.Integer({ minimum: 1, maximum: 65535 });

export const DesiredLRPDefinitionSchema = Type.Object(
  {
    process_guid: guid('Unique id of the LRP'),
    domain: Type.String({ minLength: 1 }),
    instances: Type.Integer({ minimum: 0 }),
    image: Type.String({ minLength: 1 }),
    command: Type.Optional(Type.Array(Type.String(), { description: 'The whole argv' })),
    env: Type.Optional(StringMap),
    memory_mb: Type.Optional(Type.Integer({ minimum: 0 })),
    disk_mb: Type.Optional(Type.Integer({ minimum: 0 })),
    ports: Type.Optional(Type.Array(Port, { description: 'Container ports' })),
    routes: Type.Optional(Routes),
    annotation: Type.Optional(Type.String()),
    monitor: Type.Optional(MonitorSchema),
    start_timeout_s: Type.Optional(Type.Integer({ minimum: 0 })),
    placement_tags: Type.Optional(Type.Array(Type.String())),
  },
  strict,
);

export const DesiredLRPUpdateSchema = Type.Object(
  {
    instances: Type.Optional(Type.Integer({ minimum: 0 })),
    routes: Type.Optional(Routes),
    annotation: Type.Optional(Type.String()),
  },
  { ...strict, description: 'Only instances, routes and annotation change in place' },
);

export const PortMappingSchema = Type.Object({ container_port: Port, host_port: Port }, strict);
export const InstanceKeySchema = Type.Object(
  { instance_guid: Type.String({ minLength: 1 }), cell_id: Type.String({ minLength: 1 }) },
  strict,
);
export const NetInfoSchema = Type.Object(
  { address: Type.String(), ports: Type.Array(PortMappingSchema) },
  strict,
);

export const TaskDefinitionSchema = Type.Object(
  {
    task_guid: guid('Unique id of the task'),
    domain: Type.String({ minLength: 1 }),
    image: Type.String({ minLength: 1 }),
    command: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(StringMap),
    memory_mb: Type.Optional(Type.Integer({ minimum: 0 })),
    disk_mb: Type.Optional(Type.Integer({ minimum: 0 })),
    result_file: Type.Optional(Type.String()),
    completion_callback_url: Type.Optional(Type.String()),
    placement_tags: Type.Optional(Type.Array(Type.String())),
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

const Ref = { process_guid: guid('process_guid'), index: Type.Integer({ minimum: 0 }) };
const Cas = { ...Ref, expected: ModificationTagSchema };
const TaskCas = { task_guid: guid('task_guid'), expected: ModificationTagSchema };
const Take = {
  limit: Type.Integer({ minimum: 1, maximum: 10_000 }),
  visibility_ms: Type.Integer({ minimum: 0 }),
};
const Ids = Type.Object({ ids: Type.Array(Type.Integer({ minimum: 1 }), { maxItems: 10_000 }) }, strict);
const Empty = Type.Object({}, strict);
/** The store's keyset paging (ListPage): the public routes' `limit` + `cursor`, decoded. */
function pageOf<K extends TSchema>(key: K) {
  return { limit: Type.Optional(Type.Integer({ minimum: 1 })), after: Type.Optional(key) };
}

export const operationBodies = {
  desireLRP: DesiredLRPDefinitionSchema,
  getDesiredLRP: Type.Object({ process_guid: guid('process_guid') }, strict),
  listDesiredLRPs: Type.Object({ domain: Type.Optional(Type.String()), ...pageOf(Type.String()) }, strict),
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
      process_guid: Type.Optional(Type.String()),
      domain: Type.Optional(Type.String()),
      cell_id: Type.Optional(Type.String()),
      ...pageOf(
        Type.Object(
          { process_guid: Type.String(), index: Type.Integer({ minimum: 0 }), evacuating: Type.Boolean() },
          strict,
        ),
      ),
    },
    strict,
  ),
  getActualLRP: Type.Object(Ref, strict),
  createActualLRP: Type.Object(Ref, strict),
  claimActualLRP: Type.Object({ ...Cas, instance_key: InstanceKeySchema }, strict),
  startActualLRP: Type.Object(
    {
      ...Ref,
      expected: Type.Union([ModificationTagSchema, Type.Null()]),
      domain: Type.Optional(Type.String()),
      instance_key: InstanceKeySchema,
      net_info: NetInfoSchema,
    },
    strict,
  ),
  crashActualLRP: Type.Object(
    {
      ...Ref,
      expected: Type.Union([ModificationTagSchema, Type.Null()]),
      domain: Type.Optional(Type.String()),
      instance_key: InstanceKeySchema,
      state: Type.Union([Type.Literal('UNCLAIMED'), Type.Literal('CRASHED')]),
      crash_count: Type.Integer({ minimum: 0 }),
      last_crashed_at: Type.String({ minLength: 1 }),
      crash_reason: Type.String(),
    },
    strict,
  ),
  failActualLRP: Type.Object(
    { ...Cas, placement_error: Type.String(), instance_key: Type.Optional(InstanceKeySchema) },
    strict,
  ),
  unclaimActualLRP: Type.Object(Cas, strict),
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
  takeStopRequests: Type.Object({ ...Take, cell_id: Type.Optional(Type.String()) }, strict),
  ackStopRequests: Ids,
  desireTask: TaskDefinitionSchema,
  getTask: Type.Object({ task_guid: guid('task_guid') }, strict),
  listTasks: Type.Object(
    {
      domain: Type.Optional(Type.String()),
      cell_id: Type.Optional(Type.String()),
      state: Type.Optional(
        Type.Union(['PENDING', 'RUNNING', 'COMPLETED', 'RESOLVING'].map((s) => Type.Literal(s))),
      ),
      ...pageOf(Type.String()),
    },
    strict,
  ),
  startTask: Type.Object({ ...TaskCas, cell_id: Type.String({ minLength: 1 }) }, strict),
  completeTask: Type.Object(
    {
      ...TaskCas,
      cell_id: Type.String({ minLength: 1 }),
      failed: Type.Boolean(),
      failure_reason: Type.String(),
      result: Type.String(),
    },
    strict,
  ),
  failTask: Type.Object({ ...TaskCas, failure_reason: Type.String() }, strict),
  cancelTask: Type.Object(
    { task_guid: guid('task_guid'), expected: Type.Optional(ModificationTagSchema) },
    strict,
  ),
  resolvingTask: Type.Object(TaskCas, strict),
  demoteResolvingTask: Type.Object(TaskCas, strict),
  deleteTask: Type.Object(TaskCas, strict),
  upsertDomain: Type.Object(
    { domain: Type.String({ minLength: 1 }), ttl_ms: Type.Integer({ minimum: 0 }) },
    strict,
  ),
  listDomains: Empty,
  heartbeatCell: Type.Object(
    {
      presence: Type.Object(
        {
          cell_id: Type.String({ minLength: 1 }),
          zone: Type.String(),
          capacity: Type.Object(
            {
              memory_mb: Type.Integer({ minimum: 0 }),
              disk_mb: Type.Integer({ minimum: 0 }),
              containers: Type.Integer({ minimum: 0 }),
            },
            strict,
          ),
          rep_url: Type.String(),
          placement_tags: Type.Array(Type.String()),
          model_agent: Type.Optional(Type.Boolean()),
          // What `startCell` sends: 32 random bytes, base64url (43 characters).
          rep_token: Type.Optional(
            Type.String({ minLength: 32, maxLength: 256, pattern: '^[A-Za-z0-9_-]+$' }),
          ),
        },
        strict,
      ),
      ttl_ms: Type.Integer({ minimum: 1 }),
    },
    strict,
  ),
  listCells: Empty,
  removeCell: Type.Object({ cell_id: Type.String({ minLength: 1 }) }, strict),
  acquireLease: Type.Object(
    {
      name: Type.String({ minLength: 1 }),
      holder: Type.String({ minLength: 1 }),
      ttl_ms: Type.Integer({ minimum: 1 }),
    },
    strict,
  ),
  releaseLease: Type.Object(
    { name: Type.String({ minLength: 1 }), holder: Type.String({ minLength: 1 }) },
    strict,
  ),
  listLeases: Empty,
  readSnapshot: Empty,
  readConvergenceSnapshot: Empty,
  readEvents: Type.Object(
    {
      after: Type.Optional(Type.String()),
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000 })),
    },
    strict,
  ),
  countRecords: Empty,
  pruneEvents: Type.Object({ before: Type.String({ minLength: 1 }) }, strict),
} satisfies Record<string, TSchema>;
