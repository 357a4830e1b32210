// The config loader on anything an operator (or a typo) can give it: any
// value as the parsed YAML, a valid config with one part broken, any value in
// an overriding environment variable, and YAML text with characters inserted
// or removed. It returns a frozen config or throws a ConfigError whose every
// problem starts with the field path it is about; never anything else.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { ConfigError, loadConfig, parseConfig } from '../../src/config-load/load.js';
import { fuzz, fuzzTimeout, mutated } from './support.js';

/** Every section and most keys set, so a mutation can hit each kind of field. */
const BASE = {
  server: { host: '127.0.0.1', port: 8080, apiBodyLimitBytes: 16384, trustedProxies: ['10.0.0.0/8'], workers: 1 },
  admin: { enabled: true, host: '127.0.0.1', port: 9090 },
  log: { level: 'info', access: true },
  store: { keyPrefix: 'gh:' },
  identity: { provider: 'local', usersFile: './users.yaml', watch: true },
  tokens: { issuer: 'http://127.0.0.1:8080', audience: 'gatehouse', accessTokenTtlS: 60, algorithm: 'EdDSA', keysFile: './keys.json', clockToleranceS: 5 },
  proxy: { targetDownMs: 1000, identityHeaders: { subject: 'x-gatehouse-subject' } },
  requests: { retentionS: 60, maxWaitS: 30, serviceToken: 'OA2TKg+FPc3u5agjoQoKXpaoLkMyDzOR4ae4KwpyBgw=' },
  routes: [
    {
      name: 'orders',
      prefix: '/orders',
      methods: ['GET', 'POST'],
      upstreams: ['http://127.0.0.1:9000'],
      auth: 'required',
      bodyLimitBytes: 1024,
      async: { capture: true, statusUrlTemplate: 'http://127.0.0.1:9000/jobs/{requestId}' },
    },
  ],
};

/** The variables that override the file (README, configuration). */
const ENV_NAMES = [
  'HOST',
  'PORT',
  'WORKERS',
  'ADMIN_HOST',
  'ADMIN_PORT',
  'REDIS_URL',
  'LOG_LEVEL',
  'GATEHOUSE_ISSUER',
  'GATEHOUSE_KEYS_FILE',
  'GATEHOUSE_USERS_FILE',
  'GATEHOUSE_SERVICE_TOKEN',
];

/** `field.path[0].more…` or `(top level)`, maybe `(from VARIABLE)`, then the problem. */
// `path: what is wrong`, or for a field left out `path is required: what it is, e.g. …`.
const PROBLEM = /^(\(top level\)|[A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*|\[\d+\])*)(?: \(from ([A-Z_]+)\))?(?: is required)?: \S/;

type Outcome = { config: unknown } | { problems: Array<{ path: string[]; env: string | undefined }> };

/** Runs the loader: a config, or the parsed problems of a ConfigError. Anything else thrown fails. */
function outcome(load: () => unknown): Outcome {
  try {
    const config = load();
    expect(Object.isFrozen(config)).toBe(true);
    return { config };
  } catch (error) {
    expect(error, String(error)).toBeInstanceOf(ConfigError);
    const { problems } = error as ConfigError;
    expect(problems.length).toBeGreaterThan(0);
    return {
      problems: problems.map((problem) => {
        const match = PROBLEM.exec(problem);
        expect(match, problem).not.toBeNull();
        return {
          path: match![1] === '(top level)' ? [] : match![1]!.split(/\.|\[(\d+)\]/).filter((part) => part !== undefined && part !== ''),
          env: match![2],
        };
      }),
    };
  }
}

/** Values as YAML (and tests) produce them, and the odd ones only code can. */
const anyValue = fc.anything({
  maxDepth: 2,
  withBigInt: true,
  withDate: true,
  withMap: true,
  withSet: true,
  withNullPrototype: true,
  withBoxedValues: true,
  withSparseArray: true,
  withTypedArray: true,
});

/** Every path into BASE, objects and arrays included. */
function pathsOf(value: unknown, at: string[] = []): string[][] {
  if (value === null || typeof value !== 'object') return [at];
  return [at, ...Object.entries(value).flatMap(([key, child]) => pathsOf(child, [...at, key]))];
}

function withChange(path: string[], change: { op: 'set'; value: unknown } | { op: 'delete' } | { op: 'add'; key: string; value: unknown }): unknown {
  const copy = structuredClone(BASE) as Record<string, unknown>;
  if (path.length === 0) return change.op === 'set' ? change.value : copy;
  const parent = path.slice(0, -1).reduce<Record<string, unknown>>((node, key) => node[key] as Record<string, unknown>, copy);
  const key = path.at(-1)!;
  if (change.op === 'set') parent[key] = change.value;
  else if (change.op === 'delete') delete parent[key];
  else if (parent[key] !== null && typeof parent[key] === 'object') Object.defineProperty(parent[key], change.key, { value: change.value, enumerable: true });
  return copy;
}

const isPrefix = (a: string[], b: string[]) => a.length <= b.length && a.every((segment, i) => segment === b[i]);

describe('parseConfig', () => {
  it('takes the base config of these tests', () => {
    expect(outcome(() => parseConfig(BASE, { baseDir: '/etc/gatehouse', env: {} }))).toHaveProperty('config');
  });

  it('returns a config or a ConfigError with field paths, whatever the parsed YAML holds', () => {
    fuzz(fc.property(anyValue, (raw) => void outcome(() => parseConfig(raw, { baseDir: '/etc/gatehouse', env: {} }))));
    fuzz(
      fc.property(
        fc.dictionary(fc.constantFrom(...Object.keys(BASE), 'extra'), anyValue),
        (raw) => void outcome(() => parseConfig(raw, { baseDir: '/etc/gatehouse', env: {} })),
      ),
    );
  });

  it('names the field that was broken in a valid config', () => {
    const change = fc.oneof(
      fc.record({ op: fc.constant('set' as const), value: anyValue }),
      fc.constant({ op: 'delete' as const }),
      fc.record({
        op: fc.constant('add' as const),
        key: fc.oneof(fc.constantFrom('__proto__', 'constructor', 'url', 'Port'), fc.string({ maxLength: 8 })),
        value: anyValue,
      }),
    );
    fuzz(
      fc.property(fc.constantFrom(...pathsOf(BASE)), change, (path, how) => {
        const result = outcome(() => parseConfig(withChange(path, how), { baseDir: '/etc/gatehouse', env: {} }));
        if ('problems' in result) {
          // Each problem is about the changed field, a field inside it, or what holds it.
          for (const problem of result.problems)
            expect(isPrefix(problem.path, path) || isPrefix(path, problem.path), `${problem.path.join('.')} for a change at ${path.join('.')}`).toBe(true);
        }
      }),
    );
  });

  it('names the environment variable whose value is refused', () => {
    const value = fc.oneof(
      fc.string({ maxLength: 20 }),
      fc.constantFrom('0', '65535', '65536', '-1', '1e3', '08080', '99999999999999999999', 'auto', '2', 'redis://h:1', 'http://x', 'debug', ' '),
    );
    fuzz(
      fc.property(fc.constantFrom(...ENV_NAMES), value, (name, text) => {
        const result = outcome(() => parseConfig(BASE, { baseDir: '/etc/gatehouse', env: { [name]: text } }));
        if ('problems' in result) expect(result.problems.map((p) => p.env)).toContain(name);
      }),
    );
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-fuzz-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('returns a config or a ConfigError for any edit of a YAML file', { timeout: fuzzTimeout(5) }, () => {
    const file = join(dir, 'gatehouse.yaml');
    const yamlPiece = fc.constantFrom(
      ':',
      ': ',
      '-',
      '- ',
      ' ',
      '  ',
      '\n',
      '\t',
      '&a ',
      '*a',
      '<<: *a\n',
      '!!str ',
      '!!binary ',
      '!!set ',
      '!foo ',
      '{',
      '}',
      '[',
      ']',
      '"',
      "'",
      '#',
      '|',
      '>',
      '? ',
      '%YAML 1.1\n---\n',
      '---\n',
      '...\n',
      '~',
      'null',
      '0x1F',
      '.inf',
      '1e309',
      '\u0000',
      '\ufeff',
    );
    const edit = (text: string) => mutated(text, yamlPiece);
    const text = fc.oneof(
      edit(stringify(BASE)),
      edit(stringify(BASE)).chain(edit).chain(edit),
      // Many aliases of aliases: a few bytes that expand to millions of nodes.
      fc.integer({ min: 1, max: 12 }).map(
        (depth) =>
          stringify(BASE) +
          Array.from({ length: depth }, (_, i) => `x${i + 1}: &x${i + 1} [${`*x${i},`.repeat(9)}*x${i}]\n`)
            .join('')
            .replace('*x0', '0')
            .replaceAll('*x0', '0'),
      ),
    );
    fuzz(
      fc.property(text, (yaml) => {
        writeFileSync(file, yaml);
        outcome(() => loadConfig({ file, env: {} }));
      }),
    );
  });
});

describe('found by fuzzing: a config file', () => {
  /** A ConfigError with exactly these problems. */
  const configError = (...problems: unknown[]) => expect.objectContaining({ constructor: ConfigError, problems });

  // Found by the parseConfig property: the routes' content checks ran on a value
  // that is no list and threw a TypeError (a stack trace, not exit 78).
  it.each([{}, '', 7])('whose routes are no list (%j) is refused with a ConfigError naming routes', (routes) => {
    expect(() => parseConfig({ ...BASE, routes }, { baseDir: '/', env: {} })).toThrow(configError(expect.stringMatching(/^routes: /)));
  });

  // Found by the loadConfig property above: the yaml library refuses to expand aliases past a
  // limit (a few bytes that would expand to millions of nodes) by throwing a
  // ReferenceError, which escaped the loader instead of a ConfigError (exit 78).
  it('whose aliases expand too far is refused with a ConfigError', () => {
    const dir = mkdtempSync(join(tmpdir(), 'gatehouse-fuzz-config-'));
    try {
      const file = join(dir, 'gatehouse.yaml');
      const levels = Array.from(
        { length: 6 },
        (_, i) =>
          `x${i + 1}: &x${i + 1} [${Array(10)
            .fill(i === 0 ? '0' : `*x${i}`)
            .join(',')}]`,
      );
      writeFileSync(file, `identity: {provider: local, usersFile: users.yaml}\ntokens: {keysFile: keys.json}\n${levels.join('\n')}\n`);
      expect(() => loadConfig({ file, env: {} })).toThrow(configError(expect.stringMatching(/^YAML: .*alias/i)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Found by the parseConfig properties above: the one problem without a field path.
  it.each([[[]], ['text'], [null], [42]])('that is not a mapping names the top level as its field (%j)', (raw) => {
    expect(() => parseConfig(raw, { baseDir: '/', env: {} })).toThrow(configError(expect.stringMatching(/^\(top level\): must be a mapping of sections/)));
  });
});
