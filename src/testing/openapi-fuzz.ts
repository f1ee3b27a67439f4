import fc from 'fast-check';

/**
 * Property-based requests from an OpenAPI document (the server's own `/openapi.json`): for every
 * operation with a body or parameters, values that follow the schema, with any node sometimes
 * replaced by a hostile one (boundary and huge integers, NUL, unpaired surrogates, deep nesting,
 * long strings, wrong types, extra fields). Bodies are JSON *text*, so numbers past 2^53 and
 * nesting 10,000 deep reach the server exactly as an attacker would write them.
 */

/** The subset of JSON Schema the TypeBox schemas of berth produce. */
export interface JsonSchema {
  readonly $ref?: string;
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, JsonSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: boolean | JsonSchema;
  readonly patternProperties?: Readonly<Record<string, JsonSchema>>;
  readonly maxProperties?: number;
  readonly items?: JsonSchema;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly format?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly enum?: readonly unknown[];
  readonly const?: unknown;
  readonly anyOf?: readonly JsonSchema[];
  readonly oneOf?: readonly JsonSchema[];
  readonly nullable?: boolean;
}

interface Parameter {
  readonly in: 'path' | 'query' | 'header';
  readonly name: string;
  readonly required?: boolean;
  readonly schema?: JsonSchema;
}

interface Operation {
  readonly parameters?: readonly Parameter[];
  readonly requestBody?: { readonly content: Readonly<Record<string, { readonly schema: JsonSchema }>> };
}

export interface OpenApiDocument {
  readonly paths: Readonly<Record<string, Readonly<Record<string, Operation>>>>;
  readonly components?: { readonly schemas?: Readonly<Record<string, JsonSchema>> };
}

/** JSON text spliced into a body as is (a number JavaScript cannot hold, a deep nest). */
export class RawJson {
  constructor(readonly text: string) {}
}

export interface FuzzRequest {
  readonly method: string;
  /** The route as documented, e.g. `/v1/tasks/{task_guid}` (for reports). */
  readonly route: string;
  /** Path with params substituted and the query string appended. */
  readonly url: string;
  readonly body?: string;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** Operations worth fuzzing: every one with a body or a parameter. */
export function fuzzableOperations(
  doc: OpenApiDocument,
  skip: (method: string, route: string) => boolean = () => false,
): Array<{ method: string; route: string; operation: Operation }> {
  const out: Array<{ method: string; route: string; operation: Operation }> = [];
  for (const [route, ops] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(ops)) {
      const hasInput = operation.requestBody !== undefined || (operation.parameters ?? []).length > 0;
      if (hasInput && !skip(method.toUpperCase(), route))
        out.push({ method: method.toUpperCase(), route, operation });
    }
  }
  return out;
}

// ---------------------------------------------------------------- hostile values

const longString = (n: number) => 'x'.repeat(n);
const deepArray = (n: number) => new RawJson(`${'['.repeat(n)}${']'.repeat(n)}`);
const deepObject = (n: number) => new RawJson(`${'{"a":'.repeat(n)}1${'}'.repeat(n)}`);

function hostileNumber(schema: JsonSchema): fc.Arbitrary<unknown> {
  const edges: unknown[] = [
    2 ** 31,
    2 ** 31 - 1,
    -(2 ** 31) - 1,
    2 ** 32,
    2 ** 53,
    -(2 ** 53),
    new RawJson('9007199254740993'),
    new RawJson('1e308'),
    new RawJson('1e400'),
    new RawJson('-0'),
    1.5,
    -1,
  ];
  if (schema.maximum !== undefined) edges.push(schema.maximum, schema.maximum + 1);
  if (schema.minimum !== undefined) edges.push(schema.minimum, schema.minimum - 1);
  return fc.constantFrom(...edges);
}

function hostileString(schema: JsonSchema): fc.Arbitrary<unknown> {
  const edges: unknown[] = [
    '',
    '\u0000',
    'a\u0000b',
    '\ud800',
    'x\udfff',
    '\udc00\ud800',
    '😀',
    '../../etc/passwd',
    '%00',
    longString(70_000),
    longString(1024 * 1024),
  ];
  if (schema.maxLength !== undefined)
    edges.push(longString(schema.maxLength), longString(schema.maxLength + 1));
  return fc.constantFrom(...edges);
}

/** Anything of a different kind than the schema asks for, or hostile of the same kind. */
function hostile(schema: JsonSchema): fc.Arbitrary<unknown> {
  const wrongTypes = fc.constantFrom<unknown>(null, true, 0, 'text', [], {}, [1, 'a'], { zzz: 1 });
  const nests = fc.constantFrom<unknown>(deepArray(20_000), deepObject(5_000), deepArray(33), deepArray(31));
  const types = typesOf(schema);
  const sameKind: fc.Arbitrary<unknown>[] = [];
  if (types.includes('integer') || types.includes('number')) sameKind.push(hostileNumber(schema));
  if (types.includes('string')) sameKind.push(hostileString(schema));
  return fc.oneof(...sameKind, wrongTypes, nests, hostileString({}), hostileNumber({}));
}

function typesOf(schema: JsonSchema): string[] {
  if (schema.type === undefined) return [];
  return typeof schema.type === 'string' ? [schema.type] : [...schema.type];
}

// ---------------------------------------------------------------- values that follow the schema

/** A few names used again and again, so requests meet the entities earlier ones created. */
const knownNames = fc.constantFrom('a', 'b', 'p', 'web', 'd', 'cell-1', '/web', 'x.y');

export class SchemaArbitraries {
  readonly #components: Readonly<Record<string, JsonSchema>>;
  /** Chance (0..1) that a node is replaced by a hostile value. */
  readonly #hostility: number;

  constructor(doc: OpenApiDocument, hostility = 0.08) {
    this.#components = doc.components?.schemas ?? {};
    this.#hostility = hostility;
  }

  resolve(schema: JsonSchema): JsonSchema {
    let current = schema;
    for (let i = 0; i < 10 && current.$ref !== undefined; i++) {
      const name = current.$ref.replace('#/components/schemas/', '');
      current = this.#components[name] ?? {};
    }
    return current;
  }

  /** A value for `schema`: mostly valid, any node hostile with the configured chance. */
  value(schema: JsonSchema, depth = 0): fc.Arbitrary<unknown> {
    const resolved = this.resolve(schema);
    const valid = this.#valid(resolved, depth);
    const percent = Math.round(this.#hostility * 100);
    if (percent === 0) return valid;
    return fc.oneof(
      { weight: 100 - percent, arbitrary: valid },
      { weight: percent, arbitrary: hostile(resolved) },
    );
  }

  #valid(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const branches = schema.anyOf ?? schema.oneOf;
    if (branches) return fc.oneof(...branches.map((b) => this.value(b, depth + 1)));
    if (schema.const !== undefined) return fc.constant(schema.const);
    if (schema.enum) return fc.constantFrom(...schema.enum);
    const types = typesOf(schema);
    const type = types[0];
    const base = this.#ofType(type, schema, depth);
    return schema.nullable || types.includes('null') ? fc.option(base, { nil: null }) : base;
  }

  #ofType(type: string | undefined, schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case 'integer':
      case 'number': {
        const min = schema.minimum ?? -1000;
        const max = schema.maximum ?? 1000;
        const ints = fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31 - 1) });
        const edges = fc.constantFrom(min, max, Math.min(Math.max(0, min), max));
        return fc.oneof(ints, edges);
      }
      case 'boolean':
        return fc.boolean();
      case 'null':
        return fc.constant(null);
      case 'string':
        return this.#string(schema);
      case 'array': {
        const maxItems = Math.min(schema.maxItems ?? 3, 3);
        const minItems = Math.min(schema.minItems ?? 0, maxItems);
        return fc.array(this.value(schema.items ?? {}, depth + 1), {
          minLength: minItems,
          maxLength: maxItems,
        });
      }
      case 'object':
        return this.#object(schema, depth);
      default:
        // `{}` (unknown): any small JSON value.
        return depth > 3 ? fc.oneof(fc.string(), fc.integer(), fc.boolean()) : fc.jsonValue({ maxDepth: 2 });
    }
  }

  #string(schema: JsonSchema): fc.Arbitrary<unknown> {
    const minLength = schema.minLength ?? 0;
    const maxLength = Math.max(minLength, Math.min(schema.maxLength ?? 16, 16));
    if (schema.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
    if (schema.pattern !== undefined) {
      let pattern: RegExp;
      try {
        pattern = new RegExp(schema.pattern);
      } catch {
        return fc.string({ minLength, maxLength });
      }
      // fast-check's default size makes short strings: a pattern with a long minimum length (a
      // 32-character token) would then almost never pass the filter, and a filter retries forever.
      // A larger size makes matching strings of that length common, yet bounded.
      const size = minLength >= 16 ? 'medium' : 'small';
      return fc
        .stringMatching(pattern, { size })
        .filter((s) => s.length >= minLength && s.length <= (schema.maxLength ?? 1e9));
    }
    const any = fc.string({ minLength, maxLength, unit: 'grapheme' });
    return minLength <= 1 ? fc.oneof(knownNames, any) : any;
  }

  #object(schema: JsonSchema, depth: number): fc.Arbitrary<unknown> {
    const properties = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    const keys = Object.keys(properties);
    const record: Record<string, fc.Arbitrary<unknown>> = {};
    for (const key of keys) record[key] = this.value(properties[key]!, depth + 1);
    const fixed = fc.record(record, { requiredKeys: keys.filter((k) => required.has(k)) });
    const open =
      schema.patternProperties ??
      (typeof schema.additionalProperties === 'object' ? { '.*': schema.additionalProperties } : undefined);
    const extra =
      open !== undefined
        ? fc.dictionary(
            fc.oneof(knownNames, fc.string({ maxLength: 8 })),
            this.value(Object.values(open)[0] ?? {}, depth + 1),
            { maxKeys: 3 },
          )
        : fc.constant({});
    // An unknown field now and then: a strict body must refuse it with a 400.
    const typo =
      this.#hostility > 0
        ? fc.option(fc.constant({ zzz_unknown: 1 }), { freq: 20, nil: undefined })
        : fc.constant(undefined);
    return fc.tuple(fixed, extra, typo).map(([f, e, t]) => ({ ...e, ...f, ...(t ?? {}) }));
  }
}

/** JSON text of a value that may hold RawJson pieces. */
export function toJsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A path or query component; a lone surrogate (which encodeURIComponent refuses) as its UTF-8-ish bytes. */
export function encodeComponent(value: unknown): string {
  const text = value instanceof RawJson ? value.text : typeof value === 'string' ? value : toJsonText(value);
  try {
    return encodeURIComponent(text);
  } catch {
    return text
      .split('')
      .map((c) => {
        const code = c.charCodeAt(0);
        return code >= 0xd800 && code <= 0xdfff ? '%ED%A0%80' : encodeURIComponent(c);
      })
      .join('');
  }
}

/**
 * A header value: what HTTP can carry (visible ASCII), or one of the tags and event ids that look
 * right but name what the store cannot hold (indexes past 2^31, ids past 2^53).
 */
function headerValue(arbs: SchemaArbitraries, schema: JsonSchema): fc.Arbitrary<unknown> {
  const edges = fc.constantFrom(
    '*',
    '"e:0"',
    'W/"e:1"',
    '"e:2147483648"',
    '"e:9007199254740993"',
    'e:-1',
    '99999999999999999999-1',
    '1-99999999999999999999',
    '0-0',
    'x'.repeat(8000),
  );
  const drawn = arbs.value(schema).filter((v) => typeof v === 'string' && /^[\x20-\x7e]*$/.test(v));
  return fc.oneof(edges, drawn);
}

/** Every request of one operation: params, query and body drawn together. */
export function requestArbitrary(
  arbs: SchemaArbitraries,
  op: { method: string; route: string; operation: Operation },
): fc.Arbitrary<FuzzRequest> {
  const params = op.operation.parameters ?? [];
  const paramArbs: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of params) {
    paramArbs[`${p.in}:${p.name}`] =
      p.in === 'header' ? headerValue(arbs, p.schema ?? {}) : arbs.value(p.schema ?? { type: 'string' });
  }
  const requiredKeys = params.filter((p) => p.in === 'path' || p.required).map((p) => `${p.in}:${p.name}`);
  const content = op.operation.requestBody?.content ?? {};
  const json = content['application/json'];
  const body: fc.Arbitrary<{ text: string; type: string } | undefined> = json
    ? arbs.value(json.schema).map((v) => ({ text: toJsonText(v), type: 'application/json' }))
    : fc.constant(undefined);
  return fc.tuple(fc.record(paramArbs, { requiredKeys }), body).map(([values, b]) => {
    let path = op.route;
    const query: string[] = [];
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(values)) {
      const [where, name] = key.split(':') as [string, string];
      if (where === 'path') path = path.replace(`{${name}}`, encodeComponent(value));
      else if (where === 'header') headers[name] = String(value);
      else query.push(`${encodeURIComponent(name)}=${encodeComponent(value)}`);
    }
    return {
      method: op.method,
      route: op.route,
      url: query.length > 0 ? `${path}?${query.join('&')}` : path,
      ...(b ? { body: b.text, contentType: b.type } : {}),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
    };
  });
}
