import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { InvalidArgumentError } from '../core/index.js';

/**
 * yaml is CommonJS that requires node's `process`, which the CLI's ES-module bundle cannot hold
 * (dist/cli/main.bundle.mjs): it is loaded from node_modules, and only when a deploy reads a file.
 */
function yaml(): typeof import('yaml') {
  return createRequire(import.meta.url)('yaml') as typeof import('yaml');
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What `berth deploy` sends for a definition file: its YAML text as it is, or — when a service
 * names a secret by file (`secrets: {DB_PASSWORD: {file: ./db-password}}`) — the definition as
 * JSON with each such file's content in its place (`{value: …}`), read relative to the definition
 * file. The server never reads a client's path. One trailing newline is dropped (what `echo`
 * leaves); errors name the secret and the file, never any content.
 */
export function definitionWithSecretFiles(
  text: string,
  definitionFile: string,
): string | Record<string, unknown> {
  const doc = yaml().parseDocument(text, { uniqueKeys: true });
  // A definition that does not parse is sent as it is: the server lists its problems with line numbers.
  if (doc.errors.length > 0) return text;
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch {
    // catch-all: the same: what cannot be read here is the server's to refuse, with its own message.
    return text;
  }
  if (!isRecord(value) || !isRecord(value.services)) return text;
  let changed = false;
  const services: Record<string, unknown> = {};
  for (const [path, service] of Object.entries(value.services)) {
    services[path] = service;
    if (!isRecord(service) || !isRecord(service.secrets)) continue;
    const secrets: Record<string, unknown> = {};
    for (const [name, secret] of Object.entries(service.secrets)) {
      secrets[name] = secret;
      if (!isRecord(secret) || typeof secret.file !== 'string' || Object.keys(secret).length !== 1) continue;
      const file = resolve(dirname(definitionFile), secret.file);
      let content: string;
      try {
        content = readFileSync(file, 'utf8');
      } catch (err) {
        throw new InvalidArgumentError(
          `Cannot read secret ${name} of ${path} from ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
          { path, secret: name, file },
        );
      }
      secrets[name] = { value: content.replace(/\r?\n$/, '') };
      changed = true;
    }
    services[path] = { ...service, secrets };
  }
  return changed ? { ...value, services } : text;
}
