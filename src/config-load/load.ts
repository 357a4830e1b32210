// Loading happens once, at start: file, then environment, then validation of
// the whole, then freezing. Every problem is collected into one ConfigError
// that names each field by its path, so an operator fixes them all in one go.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { DEFAULT_JOURNAL_DIR } from '../config/defaults.js';
import { providerSecretEnv } from '../config/providers-schema.js';
import { createConfigSchema, type Config } from '../config/schema.js';
import { contentChecks } from './content-checks.js';
import { listenerIssuer } from './issuer-default.js';
import { missingFieldHelp, valueAt } from './missing-fields.js';
import { resolveUpstreamTlsFiles } from './upstream-tls-files.js';

/** `config/gatehouse.yaml` of the package: the embedded default (no Redis, a demo user). */
/** The one schema, made once with the checks that judge a config's content. */
const ConfigSchema = createConfigSchema(contentChecks);

export const DEFAULT_CONFIG_FILE = fileURLToPath(new URL('../../config/gatehouse.yaml', import.meta.url));

export class ConfigError extends Error {
  readonly source: string;
  readonly problems: readonly string[];

  constructor(source: string, problems: string[]) {
    super(`invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.source = source;
    this.problems = problems;
  }
}

type EnvKind = 'string' | 'port';

/** What differs per deployment comes from the environment and wins over the file. */
export const ENV_OVERRIDES: ReadonlyArray<{ env: string; path: readonly string[]; kind: EnvKind }> = [
  { env: 'HOST', path: ['server', 'host'], kind: 'string' },
  { env: 'PORT', path: ['server', 'port'], kind: 'port' },
  { env: 'WORKERS', path: ['server', 'workers'], kind: 'port' },
  { env: 'ADMIN_HOST', path: ['admin', 'host'], kind: 'string' },
  { env: 'ADMIN_PORT', path: ['admin', 'port'], kind: 'port' },
  { env: 'REDIS_URL', path: ['store', 'url'], kind: 'string' },
  { env: 'LOG_LEVEL', path: ['log', 'level'], kind: 'string' },
  { env: 'GATEHOUSE_ISSUER', path: ['tokens', 'issuer'], kind: 'string' },
  { env: 'GATEHOUSE_KEYS_FILE', path: ['tokens', 'keysFile'], kind: 'string' },
  { env: 'GATEHOUSE_USERS_FILE', path: ['identity', 'usersFile'], kind: 'string' },
  { env: 'GATEHOUSE_SERVICE_TOKEN', path: ['requests', 'serviceToken'], kind: 'string' },
  { env: 'GATEHOUSE_SERVICE_TOKEN_PREVIOUS', path: ['requests', 'serviceTokenPrevious'], kind: 'string' },
  { env: 'GATEHOUSE_KEY_SEAL_SECRET', path: ['tokens', 'keySealSecret'], kind: 'string' },
  { env: 'GATEHOUSE_KEY_SEAL_SECRET_NEXT', path: ['tokens', 'keySealSecretNext'], kind: 'string' },
  { env: 'GATEHOUSE_KEY_SEAL_SECRET_PREVIOUS', path: ['tokens', 'keySealSecretPrevious'], kind: 'string' },
  // A secret belongs in the environment (or a mounted secret), not in the config file.
  { env: 'GATEHOUSE_OIDC_CLIENT_SECRET', path: ['identity', 'clientSecret'], kind: 'string' },
];

export interface LoadConfigOptions {
  /** The YAML file; else `GATEHOUSE_CONFIG`; else the embedded default. */
  file?: string;
  env?: NodeJS.ProcessEnv;
}

export function configFilePath(options: LoadConfigOptions = {}): string {
  const env = options.env ?? process.env;
  return resolve(options.file ?? (env.GATEHOUSE_CONFIG || DEFAULT_CONFIG_FILE));
}

/** The file's contents, validated (schema and content checks, not the file system); see check.ts for both. */
export function loadConfig(options: LoadConfigOptions = {}): Config {
  const file = configFilePath(options);
  return parseConfig(readConfigFile(file), { baseDir: dirname(file), env: options.env ?? process.env, source: file });
}

/** The YAML of `file` as plain data; a file that cannot be read or parsed is a ConfigError. */
export function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`]);
  }
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ConfigError(
      file,
      document.errors.map((e) => `YAML: ${e.message.split('\n')[0]}`),
    );
  }
  try {
    return document.toJS() ?? {};
  } catch (error) {
    // The library refuses aliases that expand past its limit (a few bytes, millions of nodes).
    throw new ConfigError(file, [`YAML: ${(error as Error).message}`]);
  }
}

export interface ParseConfigOptions {
  /** Relative file paths in the config are resolved against this folder. */
  baseDir: string;
  env?: NodeJS.ProcessEnv;
  source?: string;
}

/** Validates a configuration object (from YAML, or built by a test) and freezes it. */
export function parseConfig(raw: unknown, options: ParseConfigOptions): Config {
  const { config, problems } = validateConfig(raw, options);
  if (config === undefined) throw new ConfigError(options.source ?? 'configuration', problems);
  return config;
}

/** The files a config names, resolved, as far as they could be read (even from a config that does not validate). */
export interface ConfiguredFiles {
  usersFile?: string;
  /** `identity.usersIn: store`: the users file only seeds a store never seeded, and need not exist. */
  usersFileSeedsStore?: boolean;
  keysFile?: string;
  /** A fronted provider's client key (`identity.privateKeyFile`). */
  privateKeyFile?: string;
  /** With several providers: the field the users file is named in (`identity.providers[N].usersFile`), and each provider's client key. */
  usersFileField?: string;
  providerKeyFiles?: Array<{ field: string; path: string }>;
  /** Only with a Redis store: the in-memory store never journals. */
  journalDir?: string;
  /** The public listener's certificate, key and client CAs (`server.tls`). */
  tls?: { certFile?: string; keyFile?: string; caFile?: string };
}

export interface ConfigValidation {
  /** Undefined when there are problems. */
  config: Config | undefined;
  problems: string[];
  files: ConfiguredFiles;
  /** `label('identity.usersFile')`: the path as problems name it, with the variable it came from. */
  label(path: string): string;
}

/**
 * Schema and content checks. Also returns the files the config names even
 * when it does not validate, so that the environment checks can report their
 * problems in the same go.
 */
export function validateConfig(raw: unknown, options: ParseConfigOptions): ConfigValidation {
  const fromEnv = new Map<string, string>();
  const label = (path: string) => `${path}${fromEnv.has(path) ? ` (from ${fromEnv.get(path)})` : ''}`;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    const problem = '(top level): must be a mapping of sections (server, store, identity, tokens, routes, …)';
    return { config: undefined, problems: [problem], files: {}, label };
  }
  const merged = structuredClone(raw) as Record<string, unknown>;
  for (const { env: name, path, kind } of ENV_OVERRIDES) {
    const value = options.env?.[name];
    if (value === undefined || value === '') continue;
    setPath(merged, path, kind === 'port' && /^\d+$/.test(value) ? Number(value) : value);
    fromEnv.set(path.join('.'), name);
  }
  if (stringAt(merged, 'identity', 'provider') === 'several') severalProviderSecrets(valueAt(merged, ['identity', 'providers']), options.env, fromEnv);

  // Unset, the issuer follows the listener: moving the port moves what discovery advertises.
  const issuer = listenerIssuer(merged);
  if (issuer !== undefined) setPath(merged, ['tokens', 'issuer'], issuer);

  const files: ConfiguredFiles = {};
  const usersFile = stringAt(merged, 'identity', 'usersFile');
  // A fronted provider signs the tokens: its mode reads no keys file and creates none.
  const keysFile = stringAt(merged, 'identity', 'provider') === 'oidc' ? undefined : stringAt(merged, 'tokens', 'keysFile');
  if (usersFile) files.usersFile = resolvePath(options.baseDir, usersFile);
  if (stringAt(merged, 'identity', 'usersIn') === 'store') files.usersFileSeedsStore = true;
  if (keysFile) files.keysFile = resolvePath(options.baseDir, keysFile);
  const privateKeyFile = stringAt(merged, 'identity', 'privateKeyFile');
  if (privateKeyFile) files.privateKeyFile = resolvePath(options.baseDir, privateKeyFile);
  if (stringAt(merged, 'identity', 'provider') === 'several') severalProviderFiles(valueAt(merged, ['identity', 'providers']), options.baseDir, files);
  const tlsFile = (...path: string[]) => {
    const value = valueAt(merged, ['server', 'tls', ...path]);
    return typeof value === 'string' && value !== '' ? resolvePath(options.baseDir, value) : undefined;
  };
  if (valueAt(merged, ['server', 'tls']) !== undefined) {
    files.tls = { certFile: tlsFile('certFile'), keyFile: tlsFile('keyFile'), caFile: tlsFile('clientCertificates', 'caFile') };
  }
  if (stringAt(merged, 'store', 'url')) {
    files.journalDir = resolvePath(options.baseDir, stringAt(merged, 'requests', 'journalDir') ?? DEFAULT_JOURNAL_DIR);
  }

  const result = ConfigSchema.safeParse(merged);
  if (!result.success) {
    const problems = inPathOrder(result.error.issues).map((issue) => {
      // A field left out says what it is and what it could be, from its own metadata in the schema.
      const help = valueAt(merged, issue.path) === undefined ? missingFieldHelp(ConfigSchema, issue.path, merged) : undefined;
      const field = label(formatPath(issue.path));
      return help ? `${field} is required: ${help.what}, e.g. ${help.example}` : `${field}: ${issue.message}`;
    });
    return { config: undefined, problems, files, label };
  }
  const config = result.data;
  if (config.identity.provider === 'local') config.identity.usersFile = files.usersFile!;
  if (config.identity.provider === 'oidc' && files.privateKeyFile) config.identity.privateKeyFile = files.privateKeyFile;
  // Several providers: each one's files are relative to the config file too.
  if (config.identity.provider === 'several') {
    for (const entry of config.identity.providers) {
      if (entry.type === 'local') entry.usersFile = resolvePath(options.baseDir, entry.usersFile);
      else if (entry.privateKeyFile !== undefined) entry.privateKeyFile = resolvePath(options.baseDir, entry.privateKeyFile);
    }
  }
  if (files.keysFile !== undefined) config.tokens.keysFile = files.keysFile;
  else delete config.tokens.keysFile;
  config.requests.journalDir = resolvePath(options.baseDir, config.requests.journalDir);
  Object.assign(config.audit, { file: resolvePath(options.baseDir, config.audit.file), spoolFile: resolvePath(options.baseDir, config.audit.spoolFile) });
  if (config.server.tls !== undefined) {
    config.server.tls.certFile = files.tls!.certFile!;
    config.server.tls.keyFile = files.tls!.keyFile!;
    if (config.server.tls.clientCertificates) config.server.tls.clientCertificates.caFile = files.tls!.caFile!;
  }
  resolveUpstreamTlsFiles(config, options.baseDir);
  return { config: deepFreeze(config), problems: [], files, label };
}

/** `routes[2].upstreams[0]`: keys joined by dots, array indexes in brackets. */
export function formatPath(path: readonly PropertyKey[]): string {
  if (path.length === 0) return '(top level)';
  return path.map((key, i) => (typeof key === 'number' ? `[${key}]` : `${i === 0 ? '' : '.'}${String(key)}`)).join('');
}

/**
 * Zod reports a list's own problems (duplicates) after its entries'; an
 * operator reads them best by position: `routes[1].name` next to
 * `routes[1].upstreams`. Sections keep the order they were first named in.
 */
function inPathOrder<T extends { path: readonly PropertyKey[] }>(issues: readonly T[]): T[] {
  const rank = new Map<PropertyKey, number>();
  for (const { path } of issues) for (const key of path) if (typeof key !== 'number' && !rank.has(key)) rank.set(key, rank.size);
  const order = (key: PropertyKey | undefined) => (key === undefined ? -1 : typeof key === 'number' ? key : rank.get(key)!);
  const compare = (a: T, b: T): number => {
    for (let i = 0; i < Math.max(a.path.length, b.path.length); i++) {
      const [x, y] = [a.path[i], b.path[i]];
      if (x === y) continue;
      // A number and a string never meet at one depth of one config, except past its end (-1).
      return order(x) - order(y);
    }
    return 0;
  };
  return [...issues].sort(compare);
}

function stringAt(root: Record<string, unknown>, section: string, key: string): string | undefined {
  const node = root[section];
  if (node === null || typeof node !== 'object') return undefined;
  const value = (node as Record<string, unknown>)[key];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

function setPath(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  let node = target;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[path[path.length - 1]!] = value;
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** With several providers: the local one's users file and each one's client key, as the environment check reads them. */
function severalProviderFiles(providers: unknown, baseDir: string, files: ConfiguredFiles): void {
  if (!Array.isArray(providers)) return;
  files.providerKeyFiles = [];
  providers.forEach((entry: unknown, index) => {
    const at = `identity.providers[${index}]`;
    const { type, usersFile, usersIn, privateKeyFile } = (entry ?? {}) as Record<string, unknown>;
    if (type === 'local' && typeof usersFile === 'string' && usersFile !== '') {
      Object.assign(files, { usersFile: resolvePath(baseDir, usersFile), usersFileField: `${at}.usersFile`, usersFileSeedsStore: usersIn === 'store' });
    }
    if (typeof privateKeyFile === 'string' && privateKeyFile !== '')
      files.providerKeyFiles!.push({ field: `${at}.privateKeyFile`, path: resolvePath(baseDir, privateKeyFile) });
  });
}

/** With several providers: each OpenID Provider's client secret from its own variable (`providerSecretEnv`), as the single one's. */
function severalProviderSecrets(providers: unknown, env: NodeJS.ProcessEnv | undefined, fromEnv: Map<string, string>): void {
  if (!Array.isArray(providers)) return;
  providers.forEach((entry: unknown, index) => {
    const { type, name } = (entry ?? {}) as Record<string, unknown>;
    if (type !== 'oidc' || typeof name !== 'string') return;
    const variable = providerSecretEnv(name);
    const value = env?.[variable];
    if (value === undefined || value === '') return;
    (entry as { clientSecret?: string }).clientSecret = value;
    fromEnv.set(`identity.providers[${index}].clientSecret`, variable);
  });
}
