// Request bodies for the fuzz tests of the JSON endpoints, and the oracle that
// says what the gateway must answer to each: built from what the spec and the
// README document, independently of the gateway's own parsing code.
import fc from 'fast-check';
import { mutated } from './support.js';

/** Keys that have tripped up JSON handling elsewhere: prototype pollution, shadowed methods. */
const TRICKY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf'];

/** Any JSON value, weighted towards strings near the schema's limits and the given valid ones. */
export function fieldValue(valid: readonly string[]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: valid.length > 0 ? 4 : 0, arbitrary: fc.constantFrom('', ...valid) },
    { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom('', ' ', '\u0000', '\ufeff', 'x'.repeat(256), 'x'.repeat(257), 'x'.repeat(1024), 'x'.repeat(1025), 'x'.repeat(8193)),
    },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    { weight: 1, arbitrary: fc.record({ prototype: fc.jsonValue({ maxDepth: 1 }) }) },
  );
}

/** An object holding some of `fields` (each a list of likely values, or its own arbitrary) among other keys. */
export function jsonObject(fields: Record<string, readonly string[] | fc.Arbitrary<unknown>>): fc.Arbitrary<Record<string, unknown>> {
  const known = Object.fromEntries(Object.entries(fields).map(([name, valid]) => [name, valid instanceof fc.Arbitrary ? valid : fieldValue(valid)]));
  const extraKey = fc.oneof(fc.constantFrom(...TRICKY_KEYS, ...Object.keys(fields)), fc.string({ maxLength: 12 }));
  return fc
    .tuple(fc.dictionary(extraKey, fieldValue([]), { maxKeys: 3 }), fc.record(known, { requiredKeys: [] }), fc.boolean())
    .map(([extra, chosen, extraFirst]) => (extraFirst ? { ...extra, ...chosen } : { ...chosen, ...extra }));
}

const JSON_CHARACTER = fc.constantFrom('{', '}', '[', ']', '"', ':', ',', '\\', ' ', 'u', '0', '\u0000', '\ufeff', 'é');

/** A body's bytes: mostly JSON of an object made by `object`, else mutated, oversized or no JSON at all. */
export function jsonBody(object: fc.Arbitrary<Record<string, unknown>>, limitBytes: number): fc.Arbitrary<Buffer> {
  const text = fc.oneof(
    { weight: 6, arbitrary: object.map((o) => JSON.stringify(o)) },
    { weight: 2, arbitrary: object.chain((o) => mutated(JSON.stringify(o), JSON_CHARACTER)) },
    { weight: 1, arbitrary: object.map((o) => `${JSON.stringify(o)}${' '.repeat(limitBytes)}`) },
    { weight: 1, arbitrary: fc.json() },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
  );
  return fc.oneof(
    { weight: 9, arbitrary: text.map((t) => Buffer.from(t, 'utf8')) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)) },
  );
}

/** Content types the JSON endpoints must take as JSON, and ones they must refuse. */
export const JSON_TYPES = ['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8'];
export const NOT_JSON_TYPES = ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', ''];

/** A Content-Type header value, or none (undefined); the arbitrary ones may go either way. */
export const contentType: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...JSON_TYPES) },
  { weight: 2, arbitrary: fc.constantFrom(undefined, ...NOT_JSON_TYPES) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.constantFrom(
        'APPLICATION/JSON',
        'application/jsonx',
        'application/json-patch+json',
        'application/json; charset=latin1',
        ' application/json',
        'application/json, text/plain',
        'application/json;',
        ';',
      ),
      fc.string({ unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 40 }),
    ),
  },
);

export type Verdict =
  /** The body is a valid request (schema-valid JSON object of a JSON content type): the endpoint decides on its content. */
  | { kind: 'well-formed'; body: Record<string, unknown> }
  /** Certainly malformed: 400. */
  | { kind: 'malformed' }
  /** A content type whose treatment the interface leaves open: any documented answer. */
  | { kind: 'either'; body: Record<string, unknown> | null };

/**
 * What a JSON endpoint must make of a body: JSON (UTF-8, a leading BOM
 * ignored) of an object, no `__proto__` or `constructor.prototype` at any depth,
 * within the body limit, and each field as `schema` says.
 */
export function judgeJsonBody(bytes: Buffer, type: string | undefined, limitBytes: number, schema: Record<string, { min: number; max: number }>): Verdict {
  const body = wellFormedObject(bytes, limitBytes, schema);
  if (type !== undefined && JSON_TYPES.includes(type)) return body === null ? { kind: 'malformed' } : { kind: 'well-formed', body };
  if (type === undefined || NOT_JSON_TYPES.includes(type)) return { kind: 'malformed' };
  return { kind: 'either', body };
}

function wellFormedObject(bytes: Buffer, limitBytes: number, schema: Record<string, { min: number; max: number }>): Record<string, unknown> | null {
  if (bytes.length > limitBytes) return null;
  let text = bytes.toString('utf8');
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || holdsPrototypeKey(parsed)) return null;
  const object = parsed as Record<string, unknown>;
  for (const [name, { min, max }] of Object.entries(schema)) {
    const value = Object.hasOwn(object, name) ? object[name] : undefined;
    if (typeof value !== 'string') return null;
    const length = [...value].length;
    if (length < min || length > max) return null;
  }
  return object;
}

function holdsPrototypeKey(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Object.hasOwn(value, '__proto__')) return true;
  const ctor = (value as Record<string, unknown>).constructor;
  if (Object.hasOwn(value, 'constructor') && ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) return true;
  return Object.values(value).some(holdsPrototypeKey);
}
