// The configuration reference (docs/reference/configuration.md), generated
// from the schema itself: each field's type, default and whether it is
// required come from zod's JSON Schema of the config (what the loader
// accepts), its description from the JSDoc comment above it in
// src/config/*-schema.ts, read with the TypeScript parser. So the page
// cannot drift from the code: `--check` (run by the lint and by
// test/docs/config-reference.test.ts) fails when the page differs from what
// the schema says, and the generator refuses a field without a description.
//
//   tsx scripts/config-reference.ts          write the page
//   tsx scripts/config-reference.ts --check  exit 1 if it is stale
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as TS from 'typescript';
import { z } from 'zod';
import { createConfigSchema } from '../src/config/schema.js';
import { contentChecks } from '../src/config-load/content-checks.js';
import { ENV_OVERRIDES } from '../src/config-load/load.js';
import { RELOADS_LIVE } from '../src/config-load/reload.js';

// Loaded as the CommonJS module it is: an ESM import has Node scan all of it for names first (seconds).
const ts = createRequire(import.meta.url)('typescript') as typeof TS;

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The page, relative to the repository's root. */
export const REFERENCE_PAGE = 'docs/reference/configuration.md';
const SCHEMA_FILE = join(ROOT, 'src/config/schema.ts');
/** The function whose returned schema is the config's. */
const SCHEMA_FUNCTION = 'createConfigSchema';

// ---------------------------------------------------------------------------
// The comments: the schema's source, read with the TypeScript parser.

interface Doc {
  /** The comment's text, its lines joined. */
  text: string;
  /** `@default …`: how to describe a default that is computed (it differs between machines). */
  defaultText?: string;
}

/** What the source says about one schema: its shape as far as fields go, and the comment on its declaration. */
type Shape =
  | { kind: 'object'; doc?: Doc; props: Map<string, Prop> }
  | { kind: 'array'; doc?: Doc; item: Shape }
  | { kind: 'union'; doc?: Doc; options: Shape[] }
  | { kind: 'record'; doc?: Doc; value: Shape }
  | { kind: 'leaf'; doc?: Doc };

interface Prop {
  doc?: Doc;
  shape: Shape;
  /** Its `.default(…)` is a function: the value zod reports is this machine's. */
  computedDefault: boolean;
}

interface Resolved {
  shape: Shape;
  computedDefault: boolean;
}

/** Methods on a schema that leave its shape as it is (wrappers and checks). */
const SHAPE_KEEPING = new Set([
  'default',
  'prefault',
  'optional',
  'nullable',
  'refine',
  'superRefine',
  'check',
  'min',
  'max',
  'regex',
  'int',
  'positive',
  'nonnegative',
  'meta',
]);

function docOf(node: TS.Node): Doc | undefined {
  const docs = ts.getJSDocCommentsAndTags(node).filter(ts.isJSDoc);
  const jsDoc = docs[docs.length - 1];
  if (jsDoc === undefined) return undefined;
  const text = oneLine(ts.getTextOfJSDocComment(jsDoc.comment) ?? '');
  const defaultTag = jsDoc.tags?.find((tag) => tag.tagName.text === 'default');
  const defaultText = defaultTag === undefined ? undefined : oneLine(ts.getTextOfJSDocComment(defaultTag.comment) ?? '');
  if (text === '' && defaultText === undefined) return undefined;
  return defaultText === undefined ? { text } : { text, defaultText };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/**
 * The schema's source files, read for their syntax only (a type-checked
 * program of them would take seconds): a name is followed to its declaration
 * in the same file, an enclosing function or the file it is imported from.
 */
class SchemaSource {
  private readonly files = new Map<string, TS.SourceFile>();

  /** The shape of the schema the named function returns. */
  schemaOf(file: string, functionName: string): Shape {
    const declaration = this.exported(file, functionName);
    if (declaration === undefined || !ts.isFunctionDeclaration(declaration)) throw new Error(`${file} declares no function ${functionName}`);
    return this.returned(declaration).shape;
  }

  private source(file: string): TS.SourceFile {
    let source = this.files.get(file);
    if (source === undefined) {
      source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
      this.files.set(file, source);
    }
    return source;
  }

  private returned(declaration: TS.FunctionLikeDeclaration): Resolved {
    const body = declaration.body;
    if (body === undefined) return { shape: { kind: 'leaf' }, computedDefault: false };
    if (!ts.isBlock(body)) return this.resolve(body);
    const ret = body.statements.find(ts.isReturnStatement);
    if (ret?.expression === undefined) throw new Error(`${declaration.name?.getText() ?? 'a function'} returns no schema`);
    return this.resolve(ret.expression);
  }

  private resolve(expression: TS.Expression): Resolved {
    let expr = expression;
    while (ts.isParenthesizedExpression(expr) || ts.isAsExpression(expr) || ts.isSatisfiesExpression(expr)) expr = expr.expression;
    if (ts.isCallExpression(expr)) {
      const callee = expr.expression;
      if (ts.isPropertyAccessExpression(callee)) {
        const method = callee.name.text;
        if (ts.isIdentifier(callee.expression) && callee.expression.text === 'z')
          return { shape: this.factory(method, expr.arguments), computedDefault: false };
        const inner = this.resolve(callee.expression);
        if (!SHAPE_KEEPING.has(method)) return { shape: { kind: 'leaf' }, computedDefault: false };
        const argument = expr.arguments[0];
        const computed = (method === 'default' || method === 'prefault') && argument !== undefined && this.isFunction(argument);
        return { shape: inner.shape, computedDefault: inner.computedDefault || computed };
      }
      if (ts.isIdentifier(callee)) {
        const declaration = this.declarationOf(callee);
        if (declaration !== undefined && ts.isFunctionDeclaration(declaration)) return this.withDoc(this.returned(declaration), declaration);
      }
      return { shape: { kind: 'leaf' }, computedDefault: false };
    }
    if (ts.isIdentifier(expr) || ts.isPropertyAccessExpression(expr)) {
      const declaration = this.declarationOf(expr);
      if (declaration !== undefined && ts.isVariableDeclaration(declaration) && declaration.initializer !== undefined) {
        return this.withDoc(this.resolve(declaration.initializer), declaration);
      }
    }
    return { shape: { kind: 'leaf' }, computedDefault: false };
  }

  /** `z.strictObject({…})`, `z.array(…)`, `z.discriminatedUnion(…)`, `z.record(…)`; anything else holds no fields. */
  private factory(method: string, args: TS.NodeArray<TS.Expression>): Shape {
    const [first, second] = args;
    if ((method === 'strictObject' || method === 'object' || method === 'looseObject') && first !== undefined && ts.isObjectLiteralExpression(first)) {
      const props = new Map<string, Prop>();
      for (const member of first.properties) {
        if (!ts.isPropertyAssignment(member)) throw new Error(`cannot read ${member.getText()} (a schema field is written name: schema)`);
        const name = ts.isIdentifier(member.name) || ts.isStringLiteral(member.name) ? member.name.text : member.name.getText();
        const { shape, computedDefault } = this.resolve(member.initializer);
        const doc = docOf(member);
        props.set(name, doc === undefined ? { shape, computedDefault } : { doc, shape, computedDefault });
      }
      return { kind: 'object', props };
    }
    if (method === 'array' && first !== undefined) return { kind: 'array', item: this.resolve(first).shape };
    if ((method === 'discriminatedUnion' || method === 'union') && args.length > 0) {
      const list = method === 'union' ? first : second;
      if (list !== undefined && ts.isArrayLiteralExpression(list)) return { kind: 'union', options: list.elements.map((e) => this.resolve(e).shape) };
    }
    if ((method === 'record' || method === 'partialRecord') && second !== undefined) return { kind: 'record', value: this.resolve(second).shape };
    return { kind: 'leaf' };
  }

  private withDoc(resolved: Resolved, declaration: TS.Node): Resolved {
    const doc = docOf(declaration);
    if (doc === undefined || resolved.shape.doc !== undefined) return resolved;
    return { shape: { ...resolved.shape, doc }, computedDefault: resolved.computedDefault };
  }

  /** `name`, or `ns.name` of `import * as ns`: its declaration, followed through imports. */
  private declarationOf(node: TS.Identifier | TS.PropertyAccessExpression): TS.Declaration | undefined {
    const file = node.getSourceFile();
    if (ts.isPropertyAccessExpression(node)) {
      if (!ts.isIdentifier(node.expression)) return undefined;
      const from = this.importOf(file, node.expression.text);
      return from?.namespace ? this.exported(from.file, node.name.text) : undefined;
    }
    const name = node.text;
    for (let scope: TS.Node | undefined = node.parent; scope !== undefined; scope = scope.parent) {
      if (ts.isBlock(scope) || ts.isSourceFile(scope)) {
        const local = declaredIn(scope.statements, name);
        if (local !== undefined) return local;
      }
    }
    const from = this.importOf(file, name);
    return from !== undefined && !from.namespace ? this.exported(from.file, from.name) : undefined;
  }

  /** Where a name of this file is imported from: the file, and the name it has there. */
  private importOf(file: TS.SourceFile, local: string): { file: string; name: string; namespace: boolean } | undefined {
    for (const statement of file.statements) {
      if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const bindings = statement.importClause?.namedBindings;
      const target = moduleFile(file.fileName, statement.moduleSpecifier.text);
      if (target === undefined || bindings === undefined) continue;
      if (ts.isNamespaceImport(bindings) && bindings.name.text === local) return { file: target, name: local, namespace: true };
      if (ts.isNamedImports(bindings)) {
        const element = bindings.elements.find((e) => e.name.text === local);
        if (element !== undefined) return { file: target, name: (element.propertyName ?? element.name).text, namespace: false };
      }
    }
    return undefined;
  }

  /** A file's top-level declaration of a name, or the one it re-exports. */
  private exported(file: string, name: string): TS.Declaration | undefined {
    const source = this.source(file);
    const own = declaredIn(source.statements, name);
    if (own !== undefined) return own;
    for (const statement of source.statements) {
      if (!ts.isExportDeclaration(statement) || statement.moduleSpecifier === undefined || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const clause = statement.exportClause;
      if (clause === undefined || !ts.isNamedExports(clause)) continue;
      const element = clause.elements.find((e) => e.name.text === name);
      const target = moduleFile(file, statement.moduleSpecifier.text);
      if (element !== undefined && target !== undefined) return this.exported(target, (element.propertyName ?? element.name).text);
    }
    return undefined;
  }

  /** A default given as a function (its value is computed when the config is parsed). */
  private isFunction(node: TS.Expression): boolean {
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return true;
    if (!ts.isIdentifier(node) && !ts.isPropertyAccessExpression(node)) return false;
    const declaration = this.declarationOf(node);
    if (declaration === undefined) return false;
    if (ts.isFunctionDeclaration(declaration)) return true;
    const init = ts.isVariableDeclaration(declaration) ? declaration.initializer : undefined;
    return init !== undefined && (ts.isArrowFunction(init) || ts.isFunctionExpression(init));
  }
}

function declaredIn(statements: TS.NodeArray<TS.Statement>, name: string): TS.Declaration | undefined {
  for (const statement of statements) {
    if (ts.isFunctionDeclaration(statement) && statement.name?.text === name) return statement;
    if (ts.isVariableStatement(statement)) {
      const declaration = statement.declarationList.declarations.find((d) => ts.isIdentifier(d.name) && d.name.text === name);
      if (declaration !== undefined) return declaration;
    }
  }
  return undefined;
}

/** `./server-schema.js` from a source file: the TypeScript file it names (relative imports only). */
function moduleFile(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  return resolve(dirname(from), specifier.replace(/\.js$/, '.ts'));
}

// ---------------------------------------------------------------------------
// The fields: zod's JSON Schema of the config (input side), walked alongside
// the source's shapes.

interface JsonSchema {
  type?: string;
  const?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  default?: unknown;
  format?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
}

export interface FieldRow {
  /** `server.port`, `routes[].async.capture`, `routes[].authorize.methods.<method>.anyRole`. */
  path: string;
  type: string;
  /** Rendered: a value in code, `none` (optional, no default) or `—` (required). */
  default: string;
  required: boolean;
  description: string;
}

export interface Section {
  key: string;
  doc: string;
  required: boolean;
  /** Absent: no default (an optional section that is off unless given). */
  default: unknown;
  /** Discriminated variants (identity): their own doc and rows, in schema order. */
  variants: Array<{ name: string; doc: string; rows: FieldRow[] }>;
  rows: FieldRow[];
}

const ENV_BY_PATH = new Map(ENV_OVERRIDES.map(({ env, path }) => [path.join('.'), env]));

export function configSections(): Section[] {
  const json = z.toJSONSchema(createConfigSchema(contentChecks), { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const root = new SchemaSource().schemaOf(SCHEMA_FILE, SCHEMA_FUNCTION);
  if (root.kind !== 'object' || json.properties === undefined) throw new Error(`${SCHEMA_FUNCTION} does not return an object schema`);
  const sections = Object.entries(json.properties).map(([key, node]): Section => {
    const prop = propOf(root, key, key);
    const section: Section = {
      key,
      doc: (prop.doc ?? prop.shape.doc ?? (prop.shape.kind === 'array' ? prop.shape.item.doc : undefined))?.text ?? '',
      required: json.required?.includes(key) ?? false,
      default: node.default,
      variants: [],
      rows: [],
    };
    const union = node.oneOf ?? node.anyOf;
    if (union !== undefined && prop.shape.kind === 'union') {
      const options = prop.shape.options;
      union.forEach((variant, i) => {
        const shape = options[i];
        if (shape === undefined) throw new Error(`${key}: the source has fewer variants than the schema`);
        const name = discriminatorOf(variant);
        const rows: FieldRow[] = [];
        fieldRows(variant, shape, key, rows);
        section.variants.push({ name, doc: shape.doc?.text ?? '', rows });
      });
    } else {
      const nested = nestedFields(node, prop.shape, key);
      if (nested !== undefined) fieldRows(nested.node, nested.shape, nested.prefix, section.rows);
    }
    return section;
  });
  const undescribed = sections.flatMap((s) => [...s.rows, ...s.variants.flatMap((v) => v.rows)]).filter((row) => row.description === '');
  const bare = sections.filter((s) => s.doc === '').map((s) => s.key);
  if (undescribed.length > 0 || bare.length > 0) {
    const names = [...bare, ...undescribed.map((row) => row.path)].join(', ');
    throw new Error(`no JSDoc comment in src/config/*-schema.ts describes: ${names}`);
  }
  return sections;
}

function propOf(shape: Shape, key: string, path: string): Prop {
  const prop = shape.kind === 'object' ? shape.props.get(key) : undefined;
  if (prop === undefined) throw new Error(`${path}: not found in the schema's source (a construct this generator does not read?)`);
  return prop;
}

/** The value of the one property every variant fixes (`provider: local`). */
function discriminatorOf(variant: JsonSchema): string {
  const fixed = Object.entries(variant.properties ?? {}).find(([, node]) => node.const !== undefined);
  if (fixed === undefined) throw new Error('a union variant without a discriminating constant');
  return `${fixed[0]}: ${String(fixed[1].const)}`;
}

/** The rows of an object's fields, depth first in schema order. */
function fieldRows(node: JsonSchema, shape: Shape, prefix: string, rows: FieldRow[]): void {
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}.${key}`;
    const prop = propOf(shape, key, path);
    const doc = prop.doc ?? prop.shape.doc;
    const required = node.required?.includes(key) ?? false;
    if (prop.computedDefault && doc?.defaultText === undefined) {
      throw new Error(`${path}: its default is computed (it differs between machines): describe it with a @default tag in its comment`);
    }
    const env = ENV_BY_PATH.get(path);
    // A required field's example (its metadata, what the loader shows when the field is left out).
    const example = (child as { example?: unknown }).example;
    const exampleText = typeof example === 'string' ? `E.g. \`${example}\`.` : '';
    const description = [doc?.text ?? '', exampleText, env === undefined ? '' : `Env \`${env}\`.`].filter((s) => s !== '').join(' ');
    rows.push({ path, type: typeOf(child), default: doc?.defaultText ?? renderDefault(child, required), required, description });
    const nested = nestedFields(child, prop.shape, path);
    if (nested !== undefined) fieldRows(nested.node, nested.shape, nested.prefix, rows);
  }
}

/** Where an object's, a list entry's or a map value's own fields are, if it has any. */
function nestedFields(node: JsonSchema, shape: Shape, path: string): { node: JsonSchema; shape: Shape; prefix: string } | undefined {
  if (node.properties !== undefined && shape.kind === 'object') return { node, shape, prefix: path };
  if (node.items?.properties !== undefined && shape.kind === 'array') return { node: node.items, shape: shape.item, prefix: `${path}[]` };
  const value = node.additionalProperties;
  if (typeof value === 'object' && value.properties !== undefined && shape.kind === 'record') {
    const key = path.slice(path.lastIndexOf('.') + 1).replace(/s$/, '');
    return { node: value, shape: shape.value, prefix: `${path}.<${key}>` };
  }
  if (node.properties !== undefined || node.items?.properties !== undefined) throw new Error(`${path}: the schema has fields the source does not show`);
  return undefined;
}

function code(value: unknown): string {
  const text = typeof value === 'string' ? value : yamlFlow(value);
  return text === '' ? '`""`' : `\`${text}\``;
}

function yamlFlow(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(yamlFlow).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${k}: ${yamlFlow(v)}`)
      .join(', ')}}`;
  }
  return String(value);
}

function oneOf(values: readonly unknown[]): string {
  const items = values.map(code);
  return items.length === 1 ? items[0]! : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

function typeOf(node: JsonSchema): string {
  if (node.const !== undefined) return code(node.const);
  if (node.enum !== undefined) return oneOf(node.enum);
  const union = node.anyOf ?? node.oneOf;
  if (union !== undefined) return union.map(typeOf).join(', or ');
  switch (node.type) {
    case 'string': {
      const base = node.format === 'uri' ? 'URL' : 'string';
      const limits = [
        node.minLength !== undefined && node.minLength > 1 ? `at least ${node.minLength}` : '',
        node.maxLength !== undefined ? `at most ${node.maxLength}` : '',
      ]
        .filter((s) => s !== '')
        .join(', ');
      return limits === '' ? base : `${base} (${limits} characters)`;
    }
    case 'integer':
    case 'number':
      return `${node.type}${range(node)}`;
    case 'boolean':
      return 'boolean';
    case 'array': {
      const item = node.items === undefined ? 'any' : node.items.properties !== undefined ? 'objects' : typeOf(node.items);
      return `list of ${item}${node.minItems !== undefined && node.minItems > 0 ? `, at least ${node.minItems}` : ''}`;
    }
    case 'object': {
      const value = node.additionalProperties;
      if (typeof value === 'object') {
        const keys = node.propertyNames?.enum !== undefined ? `(${oneOf(node.propertyNames.enum)})` : 'string';
        return `map from ${keys} to ${value.properties !== undefined ? 'object' : typeOf(value)}`;
      }
      return 'object';
    }
    default:
      return 'any';
  }
}

function range(node: JsonSchema): string {
  const integer = node.type === 'integer';
  let low = node.minimum !== undefined ? `${node.minimum}` : undefined;
  if (low === undefined && node.exclusiveMinimum !== undefined) low = integer ? `${node.exclusiveMinimum + 1}` : `> ${node.exclusiveMinimum}`;
  const high = node.maximum !== undefined && node.maximum < Number.MAX_SAFE_INTEGER ? `${node.maximum}` : undefined;
  if (low !== undefined && high !== undefined && !low.startsWith('>')) return ` ${low}–${high}`;
  const parts = [low === undefined ? '' : low.startsWith('>') ? low : `≥ ${low}`, high === undefined ? '' : `≤ ${high}`].filter((s) => s !== '');
  return parts.length === 0 ? '' : ` ${parts.join(', ')}`;
}

function renderDefault(node: JsonSchema, required: boolean): string {
  if (node.default !== undefined) return code(node.default);
  return required ? '—' : 'none';
}

// ---------------------------------------------------------------------------
// The page.

/** Guides that say more about a section, and what the table cannot say. */
const SEE_ALSO: Record<string, string> = {
  server: [
    'Stopping and `shutdownGraceS`: [Stopping](../operations/stopping.md);',
    'the connection caps and deadlines: [Security](../operations/security.md#slow-clients-and-connection-limits);',
    '`trustedProxies` behind a load balancer or ingress: [Running in production](../operations/production.md#behind-a-load-balancer-or-ingress).',
  ].join(' '),
  admin: 'Health, readiness and metrics: [Observability](../operations/observability.md#health-and-readiness).',
  log: 'The access line and its fields: [Observability](../operations/observability.md#access-log).',
  identity: 'Fronting a provider: [Fronting an OpenID Provider](../guides/openid-provider.md).',
  tokens: [
    'The algorithms and why EdDSA is the default: [Tokens and keys](../guides/tokens-and-keys.md#the-default-algorithm).',
    "A `tokens.clients` entry is `- id: orders-service` with `secretHash:` a scrypt hash in the users file's format;",
    '`gatehouse clients add orders-service` prints a new secret once and the entry that takes it, and `gatehouse clients hash-secret`',
    'hashes a secret the client already has ([Command line](cli.md#clients)).',
  ].join(' '),
  requests: 'What is recorded and how statuses are asked for: [Asynchronous requests](../guides/async-requests.md).',
  limits: 'Why the login throttling has these values: [Security](../operations/security.md#online-guessing-and-spraying).',
  tracing: 'What a span holds: [Observability](../operations/observability.md#tracing).',
  authorization: 'Route rules: [Authorization](../guides/authorization.md#route-rules).',
  cors: 'How CORS requests are answered: [Authorization](../guides/authorization.md#cors).',
  account: 'The page and its API: [The account page](../guides/account-page.md).',
  routes: [
    'How a request is matched and forwarded: [Routes](../guides/routes.md);',
    'the `async` fields: [Asynchronous requests](../guides/async-requests.md#route-settings);',
    '`authorize`: [Authorization](../guides/authorization.md).',
  ].join(' '),
};

const INTRO = `# Configuration

<!-- Generated by scripts/config-reference.ts from the config schema and its comments
     (src/config/*-schema.ts): edit those, then run npm run docs:config. The lint fails
     when this page is stale. -->

One YAML file, validated against one schema (\`src/config/schema.ts\`; the
TypeScript types are inferred from it). The file is \`--config FILE\`, else
\`$GATEHOUSE_CONFIG\`, else \`config/gatehouse.yaml\` (the embedded default,
[here](../../config/gatehouse.yaml)). Relative paths in it are
relative to the file. The smallest config that starts, every line commented:
[\`config/minimal.yaml\`](../../config/minimal.yaml).

The whole config is checked before the gateway does anything — before a file
is written, a store connection or a listener opened — and every problem is
reported at once, one line each with its field path, with exit code 78
(\`EX_CONFIG\`):

\`\`\`
gatehouse: /etc/gatehouse/gatehouse.yaml: server.port: Too big: expected number to be <=65535
gatehouse: /etc/gatehouse/gatehouse.yaml: routes[2].name: duplicate route name "orders" (also routes[0])
gatehouse: /etc/gatehouse/gatehouse.yaml: routes[3].prefix: duplicate prefix "/api/v1/orders" (also routes[0])
gatehouse: /etc/gatehouse/gatehouse.yaml: identity.usersFile (from GATEHOUSE_USERS_FILE): no such file /x/users.yaml (gatehouse users add creates it)
gatehouse: /etc/gatehouse/gatehouse.yaml: tokens.keysFile: directory /nope does not exist
gatehouse: /etc/gatehouse/gatehouse.yaml: identity.clientId is required: Gatehouse's client id at the provider, e.g. gatehouse
\`\`\`

A required field left out says what it is and gives an example value (from
the field's metadata in the schema), so a config can be written from
[\`config/minimal.yaml\`](../../config/minimal.yaml) and the error messages alone.

- **The schema**: types, ranges, unknown keys (every object is strict), and
  which environment variable a bad value came from.
- **The content** (\`src/config-load/content-checks.ts\`, zod refinements that
  dry-run the code that later builds each part): route names used twice; a
  prefix repeated for the same host and overlapping methods (compared in
  canonical form: \`/orders/\` and \`/%6Frders\` are \`/orders\`; the same prefix on
  another host or for other methods is fine); prefixes the gateway serves
  itself or that hold dot segments; store URLs, trusted proxies and identity
  headers the store, proxy-addr or the header policy would refuse.
- **The environment** (\`src/config-load/environment.ts\`, read-only): the users file
  exists, is a file and parses; the keys file is readable, or its folder
  exists and is writable so the first start can create it. Only the embedded
  default may start without its users file and have its \`data/\` folder
  created; a file an operator configured (in a config file or the
  environment) must be where it says.

\`gatehouse check-config [--config FILE]\` ([command line](cli.md#check-config)) runs the same checks and nothing
more: it prints \`configuration OK (<file>)\` and exits 0, or the problems and
78 — for CI pipelines, and for operators before a reload. A hot reload runs
them too and keeps the running config on any problem; which sections it can
change is [its own table](#what-a-reload-changes).
`;

const SECRETS = `## Secrets and logs

Secrets never go in the YAML: the users file holds only scrypt hashes and API
key digests, and the key set lives in its own file (mode 0600). The two
secrets a config can need, the internal API's service token and a fronted
provider's client secret, are best set from the environment.

Logs never hold a credential, at any level: request headers are not logged,
URLs are logged with the value of every credential-like query or \`;\`
parameter masked (\`token\`, \`password\`, \`key\`, \`secret\`, \`code\`, \`jwt\`,
\`auth…\`, \`bearer\`, \`session\`, \`sid\`, \`sig\`, \`pass\`, \`pw\`, \`pwd\` and their
kin, in any case or percent-encoding), a JWT or an API key is masked wherever
it stands in a URL, and a refused login never logs the username it was given
(it may be a password typed into the wrong field).
`;

const READING = `## Reading the tables

One table per section of the file, its fields in the schema's order. A field
path names a list entry's fields with \`[]\` (\`routes[].prefix\`: the \`prefix\`
of each route) and a map's values with \`<…>\`. **Required** is judged within
the field's parent: a required field of an optional section (\`cors.allowedOrigins\`)
or of a list entry must be given whenever its parent is. **Default** is
what an absent field becomes (\`none\`: it stays unset, which the description
explains; \`{}\`: an object whose fields all take their defaults); a default
in plain words differs from machine to machine.
`;

function envSection(): string {
  const lines = [
    '## Environment variables',
    '',
    'What differs per deployment can come from the environment, which wins over',
    "the file. An unset or empty variable leaves the file's value. `PORT`,",
    '`ADMIN_PORT` and `WORKERS` are read as numbers when they are digits',
    '(`WORKERS=auto` stays a word). Each variable sets one field, so a variable',
    'of the other identity mode is refused like that field in the file:',
    '`GATEHOUSE_OIDC_CLIENT_SECRET` with `identity.provider: local` is',
    '`identity: Unrecognized key: "clientSecret"`, and `GATEHOUSE_USERS_FILE`',
    'with `oidc` likewise. A problem with a value from the environment names',
    'the variable (`server.port (from PORT): …`).',
    '',
    '| variable | sets |',
    '|---|---|',
    '| `GATEHOUSE_CONFIG` | the config file, when `--config` is not given |',
    ...ENV_OVERRIDES.map(({ env, path }) => `| \`${env}\` | \`${path.join('.')}\` |`),
    '| `GATEHOUSE_PROVIDER_<NAME>_CLIENT_SECRET` | with `identity.provider: several`, the `clientSecret` of the OpenID Provider ' +
      'named `<name>` (upper case, dashes as underscores: `GATEHOUSE_PROVIDER_BREAK_GLASS_CLIENT_SECRET`) |',
    '',
  ];
  return lines.join('\n');
}

/** Which sections a reload (an edit of the file, or SIGHUP) puts in force, from the reloader's own list. */
function reloadSection(sections: readonly Section[]): string {
  const lines = [
    '## What a reload changes',
    '',
    'The running gateway follows edits of its config file (polled each second) and',
    'reloads on SIGHUP. An edit gets the whole check of a start; then each section',
    'either reloads live or needs a restart. An edit that changes a section that',
    'needs a restart is refused whole, with one warning naming those sections',
    '(`config change refused: tokens take effect only at a restart; …`): nothing',
    'of that edit is in force until a restart, or until those changes are undone,',
    'so what runs is always one whole config. An edit of live sections only is',
    'put in force at once and logged as `config reloaded` with the sections it',
    'changed (`sections: ["cors"]`).',
    '',
    '| section | on reload |',
    '|---|---|',
  ];
  for (const { key } of sections) {
    const live = RELOADS_LIVE[key];
    const partly = Object.keys(RELOADS_LIVE).filter((path) => path.startsWith(`${key}.`));
    if (live !== undefined) lines.push(`| \`${key}\` | live: ${cell(live)} |`);
    else if (partly.length > 0) lines.push(`| \`${key}\` | ${partly.map((path) => `\`${path}\` live: ${cell(RELOADS_LIVE[path]!)}`).join('; ')} |`);
    else lines.push(`| \`${key}\` | restart |`);
  }
  lines.push('');
  return lines.join('\n');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

function table(rows: readonly FieldRow[]): string {
  const lines = ['| field | type | default | required | description |', '|---|---|---|---|---|'];
  for (const row of rows) {
    lines.push(`| \`${row.path}\` | ${cell(row.type)} | ${cell(row.default)} | ${row.required ? 'yes' : 'no'} | ${cell(row.description)} |`);
  }
  return lines.join('\n');
}

function presence(section: Section): string {
  if (section.required) return '**Required.**';
  if (section.default === undefined) return 'Optional: absent, it is off.';
  if (Array.isArray(section.default)) return `Optional; default ${code(section.default)}.`;
  return 'Optional: each field takes its default when the section, or the field, is absent.';
}

function sectionText(section: Section): string {
  const parts = [`## \`${section.key}\``, ''];
  if (section.doc !== '') parts.push(section.doc, '');
  parts.push(presence(section), '');
  const seeAlso = SEE_ALSO[section.key];
  if (seeAlso !== undefined) parts.push(seeAlso, '');
  if (section.rows.length > 0) parts.push(table(section.rows), '');
  for (const variant of section.variants) {
    parts.push(`### \`${section.key}.${variant.name}\``, '');
    if (variant.doc !== '') parts.push(variant.doc, '');
    parts.push(table(variant.rows), '');
  }
  return parts.join('\n');
}

/** The page as the schema makes it. */
export function renderConfigurationReference(): string {
  const sections = configSections();
  const contents = ['Sections of the file:', '', ...sections.map((s) => `- [\`${s.key}\`](#${s.key})`), ''].join('\n');
  return [INTRO, envSection(), reloadSection(sections), SECRETS, READING, contents, ...sections.map(sectionText)].join('\n').replace(/\n+$/, '\n');
}

/** What is wrong with the page in `file` (the reference page unless told), or undefined when it is what the schema makes. */
export function staleness(file = join(ROOT, REFERENCE_PAGE)): string | undefined {
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // missing: stale as well
  }
  const text = renderConfigurationReference();
  if (current === text) return undefined;
  return `${REFERENCE_PAGE} is stale: run npm run docs:config (first difference at line ${firstDifference(current, text)})`;
}

function main(args: readonly string[]): number {
  if (args.includes('--check')) {
    const problem = staleness();
    if (problem === undefined) return 0;
    console.error(problem);
    return 1;
  }
  writeFileSync(join(ROOT, REFERENCE_PAGE), renderConfigurationReference());
  console.log(`wrote ${REFERENCE_PAGE}`);
  return 0;
}

function firstDifference(a: string, b: string): number {
  const [x, y] = [a.split('\n'), b.split('\n')];
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  return i + 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    console.error(`config-reference: ${(error as Error).message}`);
    process.exitCode = 1;
  }
}
