// store/ is the one keyspace and the only holder of a Redis client: no module
// outside src/store/ imports ioredis or one of the store's Redis modules
// (src/store/redis-*.ts), picks a rate limiter's backend, reaches for a raw
// client, or spells a Redis key itself. Read from the sources, imports as the
// compiler sees them (comments and strings do not count).
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');
const STORE = join(SRC, 'store');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const outsideStore = sourceFiles(SRC).filter((file) => !file.startsWith(STORE + sep));

/** Every module a file imports (static, dynamic, re-exports), as written. */
function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((imported) => imported.fileName);
}

/** Why importing `specifier` from `file` crosses the boundary, or undefined when it does not. */
function forbidden(file: string, specifier: string): string | undefined {
  if (specifier === 'ioredis' || specifier.startsWith('ioredis/')) return 'ioredis';
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(file), specifier);
  if (dirname(target) === STORE && basename(target).startsWith('redis-')) return 'a Redis module of the store';
  return undefined;
}

const printed = new Map<string, string>();

/** Code without its comments (printed again by the compiler), for the checks that look at names and strings. */
function withoutComments(file: string): string {
  let code = printed.get(file);
  if (code === undefined) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
    code = ts.createPrinter({ removeComments: true }).printFile(source);
    printed.set(file, code);
  }
  return code;
}

const KEYSPACE_NAMES = 'session|ended-session|user-sessions|request|apikey|user-apikeys|apikey-used|introspection|limits|revocations|request-status';

/** What in `code` reaches for the store's client or builds one of its keys by hand. */
function keyBuilding(code: string): string[] {
  const found: string[] = [];
  if (/\bredisClient\b/.test(code)) found.push('redisClient');
  if (/:\{\$\{/.test(code)) found.push('a hash-tagged key');
  if (new RegExp(`\\$\\{[^}]*[pP]refix[^}]*\\}(${KEYSPACE_NAMES})\\b`).test(code)) found.push('a key under the store prefix');
  return found;
}

describe('the store boundary', () => {
  it('finds the sources it checks', () => {
    expect(outsideStore.length).toBeGreaterThan(50);
    expect(outsideStore.some((file) => file.endsWith(join('limits', 'limiters.ts')))).toBe(true);
  });

  it('lets no module outside src/store/ import ioredis or a Redis module of the store', () => {
    const crossings = outsideStore.flatMap((file) =>
      importsOf(file).flatMap((specifier) => {
        const why = forbidden(file, specifier);
        return why === undefined ? [] : [`${relative(SRC, file)} imports ${specifier} (${why})`];
      }),
    );
    expect(crossings).toStrictEqual([]);
  });

  it('leaves the choice of a rate limiter backend to the store', () => {
    const choosing = outsideStore.filter((file) => /\bRateLimiter(Redis|Memory|Cluster)\b/.test(withoutComments(file)));
    expect(choosing.map((file) => relative(SRC, file))).toStrictEqual([]);
  });

  it('hands no raw client out and spells no Redis key outside the store', () => {
    const offenders = outsideStore.flatMap((file) => keyBuilding(withoutComments(file)).map((what) => `${relative(SRC, file)}: ${what}`));
    expect(offenders).toStrictEqual([]);
  });

  it('catches what it is meant to catch', () => {
    const file = join(SRC, 'limits', 'unlock.ts');
    expect(forbidden(file, 'ioredis')).toBe('ioredis');
    expect(forbidden(file, '../store/redis-client.js')).toBe('a Redis module of the store');
    expect(forbidden(file, '../store/redis-store.js')).toBe('a Redis module of the store');
    expect(forbidden(file, '../store/store.js')).toBeUndefined();
    expect(forbidden(file, '../store/rate-limiters.js')).toBeUndefined();
    // What the callers wrote before the keyspace was the store's alone.
    expect(keyBuilding('const limits = `${store.keyPrefix}limits:`;')).toStrictEqual(['a key under the store prefix']);
    expect(keyBuilding('`${this.#options.keyPrefix}introspection:${digest}`')).toStrictEqual(['a key under the store prefix']);
    expect(keyBuilding('return `${this.#prefix}apikey:{${keyId}}`;')).toStrictEqual(['a hash-tagged key', 'a key under the store prefix']);
    expect(keyBuilding('new StoreApiKeys(store.redisClient!, config.keyPrefix)')).toStrictEqual(['redisClient']);
    expect(keyBuilding('const url = `${prefix}/slow-upload`;')).toStrictEqual([]);
  });
});
