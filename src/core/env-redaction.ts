/** What a viewer sees in place of every env value (names stay: they say what is configured). */
export const redactedEnvValue = '<redacted>';

/**
 * A copy of `value` in which every `env` field — a map of names to values (DesiredLRPs, tasks,
 * system definitions, relation data) or an OCI-style `["NAME=value"]` list (pod manifests) — keeps
 * its names and shows `<redacted>` for each value. Env is where secrets are passed to containers;
 * viewers may see what runs, not the secrets it runs with (docs/auth.md). Everything else is
 * returned as it is (the same object when nothing needed redacting).
 */
export function redactEnv(value: unknown): unknown {
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const next = redactEnv(value[i]);
      if (next !== value[i]) {
        copy ??= [...value];
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return value;
  let copy: Record<string, unknown> | undefined;
  for (const [key, field] of Object.entries(value)) {
    const next = key === 'env' ? redactedEnvField(field) : redactEnv(field);
    if (next !== field) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[key] = next;
    }
  }
  return copy ?? value;
}

function redactedEnvField(env: unknown): unknown {
  if (Array.isArray(env)) {
    return env.map((entry) =>
      typeof entry === 'string' ? `${entry.split('=', 1)[0]}=${redactedEnvValue}` : redactEnv(entry),
    );
  }
  if (env === null || typeof env !== 'object') return env;
  return Object.fromEntries(
    Object.entries(env).map(([name, v]) => [name, typeof v === 'string' ? redactedEnvValue : redactEnv(v)]),
  );
}
