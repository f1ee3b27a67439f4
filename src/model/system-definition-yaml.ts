import { parseDocument } from 'yaml';
import {
  InvalidDefinitionError,
  type SystemDefinition,
  validateSystemDefinition,
} from './system-definition.js';

/** Parses the YAML form of issue 8; throws `InvalidDefinitionError` listing every problem. */
export function parseSystemDefinition(text: string): SystemDefinition {
  let doc: ReturnType<typeof parseDocument>;
  try {
    doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  } catch (err) {
    // The YAML parser recurses: a document nested thousands deep overflows its stack.
    throw new InvalidDefinitionError([
      { path: '/', field: '', message: `YAML cannot be read: ${(err as Error).message}` },
    ]);
  }
  if (doc.errors.length > 0) {
    throw new InvalidDefinitionError(
      doc.errors.map((e) => ({
        path: '/',
        field: '',
        message: `YAML line ${e.linePos?.[0]?.line ?? '?'}: ${e.message.split('\n')[0]?.replace(/ at line \d+, column \d+:?$/, '')}`,
      })),
    );
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new InvalidDefinitionError([
      { path: '/', field: '', message: `YAML cannot be read: ${(err as Error).message}` },
    ]);
  }
  const result = validateSystemDefinition(value);
  if (!result.ok) throw new InvalidDefinitionError(result.problems);
  return result.definition;
}
