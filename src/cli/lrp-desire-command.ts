import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { Value } from '@sinclair/typebox/value';
import { parse as parseYaml } from 'yaml';
import {
  type DesiredLRPDefinition,
  DesiredLRPDefinitionSchema,
  bbsPublicOperations as ops,
} from '../bbs/index.js';
import { errnoCode, InvalidArgumentError } from '../core/index.js';
import { type CommandHandler, defaultCliDomain } from './command.js';
import { serverClient } from './server-client.js';

/**
 * Reads a DesiredLRP from YAML or JSON (JSON is YAML, but a .json file gets JSON's own error
 * messages) and checks it against the API's schema here, so every problem names its field before
 * anything is sent. `domain` defaults to "berth" and `instances` to 1.
 */
export function readDesiredLRPFile(file: string, text: string): DesiredLRPDefinition {
  let doc: unknown;
  try {
    doc = extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new InvalidArgumentError(
      `Cannot parse ${file}: ${err instanceof Error ? err.message : String(err)}`,
      { file },
    );
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new InvalidArgumentError(`Invalid ${file}: expected a mapping of DesiredLRP fields`, { file });
  }
  const withDefaults: Record<string, unknown> = { domain: defaultCliDomain, instances: 1, ...doc };
  const problems: string[] = [];
  const fields: string[] = [];
  for (const error of Value.Errors(DesiredLRPDefinitionSchema, withDefaults)) {
    const field = error.path.replace(/^\//, '').replaceAll('/', '.') || '(document)';
    // TypeBox reports a missing field twice (required, then its type); say it once.
    if (fields.includes(field)) continue;
    fields.push(field);
    problems.push(`${field}: ${error.message.toLowerCase()}`);
  }
  if (problems.length > 0) {
    throw new InvalidArgumentError(`Invalid ${file}:\n  ${problems.join('\n  ')}`, { file, fields });
  }
  return withDefaults as unknown as DesiredLRPDefinition;
}

const desire: CommandHandler = {
  name: 'lrp desire',
  async run(ctx) {
    const file = ctx.positionals[0] ?? '';
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (err) {
      throw new InvalidArgumentError(`Cannot read ${file}: ${errnoCode(err) ?? String(err)}`, { file });
    }
    const definition = readDesiredLRPFile(file, text);
    const client = serverClient(ctx);
    const desired = await client.call(ops.desireLrp, { body: definition });
    // The converger stops extra instances only in fresh domains (seed 002); a user desiring from
    // the CLI is that domain's authority, so it stays fresh (ttl 0 = forever).
    await client.call(ops.upsertDomain, { params: { domain: desired.domain }, body: { ttl_ms: 0 } });
    ctx.stdout.write(`${desired.process_guid}\n`);
    return 0;
  },
};

export const commands: readonly CommandHandler[] = [desire];
