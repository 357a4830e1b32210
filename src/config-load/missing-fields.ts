// What a field left out of a config is, from the schema itself: each required
// field carries a FieldHelp in its metadata (config/schema-primitives.ts), and
// this finds the field a problem's path names by walking the schema the way
// zod parsed the file (a discriminated union by the file's own `provider`).
// One rule for every field, so no field's message is written here.
import { z } from 'zod';
import type { FieldHelp } from '../config/schema-primitives.js';

type Node = z.core.$ZodType;

interface Def {
  type: string;
  innerType?: Node;
  in?: Node;
  shape?: Record<string, Node>;
  element?: Node;
  valueType?: Node;
  options?: readonly Node[];
  discriminator?: string;
}

const defOf = (node: Node): Def => node._zod.def as unknown as Def;

/** The value at `path` in the raw config, or undefined when any step of it is missing. */
export function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** The help of the field at `path`, when the schema gives one. */
export function missingFieldHelp(schema: Node, path: readonly PropertyKey[], raw: unknown): FieldHelp | undefined {
  let node: Node | undefined = schema;
  for (let depth = 0; depth < path.length && node !== undefined; depth++) {
    node = child(node, path[depth]!, valueAt(raw, path.slice(0, depth)));
  }
  return node === undefined ? undefined : helpOf(node);
}

/** The field's own help, or that of a schema it wraps (`.optional()`, `.default()` around the one with metadata). */
function helpOf(node: Node): FieldHelp | undefined {
  for (let current: Node | undefined = node; current !== undefined; current = unwrapOnce(current)) {
    const meta = z.globalRegistry.get(current) as Partial<FieldHelp> | undefined;
    if (typeof meta?.what === 'string' && typeof meta.example === 'string') return { what: meta.what, example: meta.example };
  }
  return undefined;
}

function unwrapOnce(node: Node): Node | undefined {
  const def = defOf(node);
  return def.innerType ?? def.in;
}

/** The schema of `key` within `node` (whose raw value is `value`), through wrappers and unions. */
function child(node: Node, key: PropertyKey, value: unknown): Node | undefined {
  for (let current: Node | undefined = node; current !== undefined; current = unwrapOnce(current)) {
    const def = defOf(current);
    if (def.type === 'object') return typeof key === 'string' ? def.shape?.[key] : undefined;
    if (def.type === 'array') return typeof key === 'number' ? def.element : undefined;
    if (def.type === 'record') return def.valueType;
    if (def.type === 'union') return unionChild(def, key, value);
  }
  return undefined;
}

/** The option the raw value's discriminator names; when it names none (it is what is missing), the first that has the key. */
function unionChild(def: Def, key: PropertyKey, value: unknown): Node | undefined {
  const options = def.options ?? [];
  const tag = def.discriminator !== undefined ? valueAt(value, [def.discriminator]) : undefined;
  const chosen = options.filter((option) => {
    const shape = defOf(option).shape;
    return tag === undefined || shape?.[def.discriminator!]?._zod.values?.has(tag as never) === true;
  });
  for (const option of chosen.length > 0 ? chosen : options) {
    const found = child(option, key, value);
    if (found !== undefined) return found;
  }
  return undefined;
}
