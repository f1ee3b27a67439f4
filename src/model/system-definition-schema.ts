import { type Static, Type } from '@sinclair/typebox';
import { monitorTimingProperties, SidecarMountsSchema, VolumeMountsSchema } from '../bbs/index.js';
import {
  ArgString,
  Argv as BoundedArgv,
  DiskMb,
  EnvMap,
  ImageRef,
  Instances,
  limits,
  MemoryMb,
  Name,
  Routes,
} from '../core/index.js';

/**
 * The shape of a system definition's entries, as TypeBox schemas: what `validateSystemDefinition`
 * checks first (every error at once), before the references between entries.
 */

const Port = Type.Integer({ minimum: 1, maximum: 65535 });
const Argv = BoundedArgv(ArgString({ minLength: 1 }), { minItems: 1 });
const Env = EnvMap();
// The timing fields (period_ms…) are those of a DesiredLRP's monitor, bounds checked below by name.
const MonitorSchema = Type.Union([
  Type.Object({ tcp: Port, ...monitorTimingProperties }, { additionalProperties: false }),
  Type.Object(
    {
      http: Type.Object(
        { port: Port, path: Type.String({ pattern: '^/', maxLength: limits.maxUrlLength }) },
        { additionalProperties: false },
      ),
      ...monitorTimingProperties,
    },
    { additionalProperties: false },
  ),
  Type.Object({ command: Argv, ...monitorTimingProperties }, { additionalProperties: false }),
]);

const SecretSchema = Type.Union([
  Type.Object(
    { file: Type.String({ minLength: 1, maxLength: limits.maxUrlLength }) },
    { additionalProperties: false },
  ),
  Type.Object({ value: ArgString() }, { additionalProperties: false }),
  Type.Object(
    {
      sealed: Type.String({ maxLength: 2 * limits.maxArgLength }),
      digest: Type.String({ pattern: '^[0-9a-f]{32}$' }),
    },
    { additionalProperties: false },
  ),
]);
const Secrets = Type.Record(Type.String(), SecretSchema, {
  maxProperties: limits.maxEnvVars,
  propertyNames: { maxLength: limits.maxNameLength },
});

const common = {
  image: ImageRef(),
  command: Type.Optional(Argv),
  env: Type.Optional(Env),
  memory_mb: Type.Optional(MemoryMb(1)),
  disk_mb: Type.Optional(DiskMb(1)),
  annotation: Type.Optional(Type.String({ maxLength: limits.maxAnnotationLength })),
};

export const ServiceSchema = Type.Object(
  {
    ...common,
    instances: Type.Optional(Instances()),
    ports: Type.Optional(Type.Array(Port, { maxItems: limits.maxPorts })),
    monitor: Type.Optional(MonitorSchema),
    secrets: Type.Optional(Secrets),
    routes: Type.Optional(Routes()),
    relations: Type.Optional(Type.Array(Name(), { maxItems: limits.maxSystemEntries })),
    subordinate_to: Type.Optional(Name()),
    volumes: Type.Optional(VolumeMountsSchema),
    colocate: Type.Optional(Type.Literal('pod')),
    mounts: Type.Optional(SidecarMountsSchema),
  },
  { additionalProperties: false },
);

export const JobSchema = Type.Object(common, { additionalProperties: false });

export const TopSchema = Type.Object(
  {
    system: Type.String({ pattern: '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$' }),
    services: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: limits.maxSystemEntries }),
    ),
    jobs: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { maxProperties: limits.maxSystemEntries }),
    ),
  },
  { additionalProperties: false },
);

export type RawService = Static<typeof ServiceSchema>;
export type RawJob = Static<typeof JobSchema>;
