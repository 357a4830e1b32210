// Loading happens once, at start: file, then environment, then validation of
// the whole, then freezing. Every problem is collected into one ConfigError
// that names each field by its path, so an operator fixes them all in one go.
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import { ConfigSchema, type Config } from './schema.js';

/** `config/gatehouse.yaml` of the package: the embedded default (no Redis, a demo user). */
export const DEFAULT_CONFIG_FILE = fileURLToPath(new URL('../../config/gatehouse.yaml', import.meta.url));

export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(source: string, problems: string[]) {
    super(`invalid configuration (${source}):\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
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

export function loadConfig(options: LoadConfigOptions = {}): Config {
  const env = options.env ?? process.env;
  const file = configFilePath(options);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError(file, [`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`]);
  }
  return parseConfig(parseYaml(text, file), { baseDir: dirname(file), env, source: file });
}

function parseYaml(text: string, source: string): unknown {
  const document = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (document.errors.length > 0) {
    throw new ConfigError(
      source,
      document.errors.map((e) => `YAML: ${e.message.split('\n')[0]}`),
    );
  }
  try {
    return document.toJS() ?? {};
  } catch (error) {
    // The library refuses aliases that expand past its limit (a few bytes, millions of nodes).
    throw new ConfigError(source, [`YAML: ${(error as Error).message}`]);
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
  const source = options.source ?? 'configuration';
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(source, ['(top level): must be a mapping of sections (server, store, identity, tokens, routes, …)']);
  }
  const problems: string[] = [];
  const merged = structuredClone(raw) as Record<string, unknown>;
  const fromEnv = new Map<string, string>();
  for (const { env: name, path, kind } of ENV_OVERRIDES) {
    const value = options.env?.[name];
    if (value === undefined || value === '') continue;
    setPath(merged, path, kind === 'port' && /^\d+$/.test(value) ? Number(value) : value);
    fromEnv.set(path.join('.'), name);
  }

  const result = ConfigSchema.safeParse(merged);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const path = issue.path.join('.') || '(top level)';
      const envName = fromEnv.get(path);
      problems.push(`${path}${envName ? ` (from ${envName})` : ''}: ${issue.message}`);
    }
    throw new ConfigError(source, problems);
  }

  const config = result.data;
  config.identity.usersFile = resolvePath(options.baseDir, config.identity.usersFile);
  config.tokens.keysFile = resolvePath(options.baseDir, config.tokens.keysFile);
  return deepFreeze(config);
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
