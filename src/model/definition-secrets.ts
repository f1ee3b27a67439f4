import { createHash } from 'node:crypto';
import { BerthError } from '../core/index.js';
import { canonical, secretDigests } from './deploy-plan.js';
import type { SecretBox } from './secret-box.js';
import {
  type DefinitionProblem,
  InvalidDefinitionError,
  type ServiceDefinition,
  type SystemDefinition,
} from './system-definition.js';

/**
 * A definition as the API received it → as the server stores it: every `{value}` secret sealed
 * with the server's key. A `{file}` is refused (the server never reads a client's path: `berth
 * deploy` sends the file's content), and so is a `{sealed}` one from a client (sealed secrets come
 * only from a stored deploy: `berth rollback`). Problems never quote a value.
 */
export function sealDefinition(definition: SystemDefinition, box: SecretBox | undefined): SystemDefinition {
  const problems: DefinitionProblem[] = [];
  const services = definition.services.map((service): ServiceDefinition => {
    if (!service.secrets) return service;
    const sealed: Record<string, { sealed: string; digest: string }> = {};
    for (const [name, secret] of Object.entries(service.secrets)) {
      const field = `secrets.${name}`;
      if ('file' in secret)
        problems.push({
          path: service.path,
          field,
          message: 'the server does not read files: send {value: …} (berth deploy reads the file for you)',
        });
      else if ('sealed' in secret)
        problems.push({
          path: service.path,
          field,
          message: 'sealed secrets come only from a stored deploy (berth rollback); send {value: …}',
        });
      else if (!box)
        problems.push({
          path: service.path,
          field,
          message: 'this server keeps no secrets: start it with a data dir (--data-dir) for its key',
        });
      else sealed[name] = box.seal(name, secret.value);
    }
    return { ...service, secrets: sealed };
  });
  if (problems.length > 0) throw new InvalidDefinitionError(problems);
  return { ...definition, services };
}

/** The secret variables of a stored service, opened for the container about to start. */
export function openSecrets(service: ServiceDefinition, box: SecretBox | undefined): Record<string, string> {
  if (!service.secrets) return {};
  if (!box)
    throw new BerthError('unavailable', `${service.path} has secrets but this server has no secret key`, {
      path: service.path,
    });
  const out: Record<string, string> = {};
  for (const [name, secret] of Object.entries(service.secrets)) {
    if (!('sealed' in secret))
      throw new BerthError('internal', `secret ${name} of ${service.path} is stored unsealed`, {
        path: service.path,
      });
    out[name] = box.open(name, secret);
  }
  return out;
}

/**
 * The sha256 of a stored definition in canonical form (keys sorted), each secret counted by its
 * keyed digest: two deploys of the same file (same secret values) have the same digest, though
 * each sealed its secrets anew.
 */
export function definitionDigest(definition: SystemDefinition): string {
  const comparable = {
    ...definition,
    services: definition.services.map((s) => (s.secrets ? { ...s, secrets: secretDigests(s.secrets) } : s)),
  };
  return createHash('sha256').update(canonical(comparable)).digest('hex');
}

/** `path → secret names` of a definition: what a listing may say about its secrets. */
export function secretNames(definition: SystemDefinition): Record<string, string[]> {
  return Object.fromEntries(
    definition.services.flatMap((s) =>
      s.secrets ? [[s.path, Object.keys(s.secrets).sort()] as [string, string[]]] : [],
    ),
  );
}
