import { once } from 'node:events';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { calculateJwkThumbprint, jwtVerify, SignJWT, type JWK } from 'jose';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runKeysCommand } from '../../src/cli/keys.js';
import { SIGNING_ALGORITHMS, type SigningAlgorithm } from '../../src/config/schema.js';
import { listKeys, rotateKeys } from '../../src/tokens/key-rotation.js';
import { loadKeySet, type WatchedKeySet } from '../../src/tokens/keyset.js';
import { KeysFileError, type KeysFile } from '../../src/tokens/keys-file.js';
import { TokenError } from '../../src/tokens/types.js';
import { nextEvent } from '../helpers/events.js';

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];
const RETAIN_S = 3600;

let folder: string;
const open: WatchedKeySet[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-keyset-'));
});

afterEach(async () => {
  for (const keys of open.splice(0)) keys.close();
  await rm(folder, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

function capturingLogger() {
  const lines: LogLine[] = [];
  const raw: string[] = [];
  const logger = pino(
    { level: 'debug' },
    {
      write(line: string) {
        raw.push(line);
        lines.push(JSON.parse(line) as LogLine);
      },
    },
  );
  return { logger, lines, raw };
}

async function load(
  options: {
    file?: string;
    algorithm?: SigningAlgorithm;
    retainS?: number;
    watch?: boolean;
    now?: () => number;
    readOnly?: boolean;
    logger?: ReturnType<typeof capturingLogger>['logger'];
  } = {},
): Promise<WatchedKeySet> {
  const keys = await loadKeySet({
    file: options.file ?? join(folder, 'keys.json'),
    algorithm: options.algorithm ?? 'EdDSA',
    retainS: options.retainS ?? RETAIN_S,
    logger: options.logger ?? pino({ level: 'silent' }),
    ...(options.watch !== undefined && { watch: options.watch }),
    ...(options.readOnly !== undefined && { readOnly: options.readOnly }),
    ...(options.now !== undefined && { now: options.now }),
  });
  open.push(keys);
  return keys;
}

async function readStored(file = join(folder, 'keys.json')): Promise<KeysFile> {
  return JSON.parse(await readFile(file, 'utf8')) as KeysFile;
}

/** A token signed by the set's current key, and a check of it through getVerificationKey. */
async function signWith(keys: WatchedKeySet): Promise<string> {
  const { kid, alg, key } = keys.signingKey();
  return new SignJWT({ sub: 'user' }).setProtectedHeader({ alg, kid }).setIssuedAt().setExpirationTime('1h').sign(key);
}

async function verifiesWith(keys: WatchedKeySet, token: string): Promise<boolean> {
  return jwtVerify(token, (header) => keys.getVerificationKey(header), { algorithms: keys.algorithms() }).then(
    () => true,
    () => false,
  );
}

/** Resolves at the first reload after this call whose outcome `done` accepts. */
async function reloaded(keys: WatchedKeySet, done: (applied: boolean) => boolean = () => true): Promise<boolean> {
  const [applied] = await nextEvent<[boolean]>(keys, 'reload', done);
  return applied;
}

function cliIo(file: string, algorithm: SigningAlgorithm = 'EdDSA') {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (chunk: Buffer) => out.push(chunk.toString('utf8')));
  stderr.on('data', (chunk: Buffer) => err.push(chunk.toString('utf8')));
  return { io: { keysFile: file, algorithm, retainS: RETAIN_S, stdout, stderr }, out: () => out.join(''), err: () => err.join('') };
}

describe('loadKeySet: first start', () => {
  it.each(SIGNING_ALGORITHMS)('generates a %s key, persists it with mode 0600 in a new folder, and logs its kid', async (alg) => {
    const file = join(folder, 'nested', 'deeper', 'keys.json');
    const { logger, lines, raw } = capturingLogger();
    const keys = await load({ file, algorithm: alg, logger });

    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const stored = await readStored(file);
    expect(stored.version).toBe(1);
    expect(stored.keys).toHaveLength(1);
    const [entry] = stored.keys;
    expect(entry).toMatchObject({ alg, kid: keys.signingKey().kid });
    expect(entry!.retiredAt).toBeUndefined();
    expect(new Date(entry!.createdAt).toISOString()).toBe(entry!.createdAt);
    expect(typeof entry!.jwk.d).toBe('string');
    // RFC 7638: the kid is the thumbprint of the public key.
    expect(entry!.kid).toBe(await calculateJwkThumbprint(entry!.jwk));
    if (alg === 'RS256') expect(Buffer.from(entry!.jwk.n!, 'base64url')).toHaveLength(256);

    expect(keys.algorithm).toBe(alg);
    expect(keys.signingKey()).toMatchObject({ kid: entry!.kid, alg });
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'generated a signing key', kid: entry!.kid, alg }));
    expect(raw.join('')).not.toContain(entry!.jwk.d!);
    expect(await verifiesWith(keys, await signWith(keys))).toBe(true);
  });

  it('loads the same key again without rewriting the file', async () => {
    const file = join(folder, 'keys.json');
    const first = await load();
    const before = await readFile(file, 'utf8');
    const { logger, lines } = capturingLogger();
    const second = await load({ logger });

    expect(second.signingKey().kid).toBe(first.signingKey().kid);
    expect(await readFile(file, 'utf8')).toBe(before);
    expect(lines.map((l) => l.msg)).not.toContain('generated a signing key');
    // A token signed before the restart verifies after it.
    expect(await verifiesWith(second, await signWith(first))).toBe(true);
  });

  it('gives instances starting together on a missing file one common key', async () => {
    const file = join(folder, 'shared', 'keys.json');
    const sets = await Promise.all(Array.from({ length: 8 }, () => load({ file })));
    const kids = new Set(sets.map((k) => k.signingKey().kid));
    expect(kids.size).toBe(1);
    expect((await readStored(file)).keys.map((k) => k.kid)).toEqual([...kids]);
  });

  it('warns when the keys file may be read by other users', async () => {
    const file = join(folder, 'keys.json');
    await load();
    await chmod(file, 0o644);
    const { logger, lines } = capturingLogger();
    await load({ logger });
    expect(lines).toContainEqual(expect.objectContaining({ level: 40, file, mode: '644' }));
  });
});

describe('rotation', () => {
  it('makes a new key sign while the previous key keeps verifying', async () => {
    const file = join(folder, 'keys.json');
    const before = await load();
    const oldKid = before.signingKey().kid;
    const oldToken = await signWith(before);

    const { kid } = await rotateKeys({ file, algorithm: 'EdDSA', retainS: RETAIN_S });
    expect(kid).not.toBe(oldKid);

    const after = await load();
    expect(after.signingKey().kid).toBe(kid);
    expect(await verifiesWith(after, oldToken)).toBe(true);
    expect(await verifiesWith(after, await signWith(after))).toBe(true);
    // The signing key comes first in the JWKS.
    expect(after.publicJwks().keys.map((k) => k.kid)).toEqual([kid, oldKid]);

    const stored = await readStored(file);
    expect(stored.keys.find((k) => k.kid === oldKid)?.retiredAt).toEqual(expect.any(String));
    expect(stored.keys.find((k) => k.kid === kid)?.retiredAt).toBeUndefined();
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('prunes a retired key once retainS has passed since its retirement', async () => {
    const file = join(folder, 'keys.json');
    const t0 = Date.parse('2030-01-01T00:00:00Z');
    const first = await load({ now: () => t0 });
    const oldKid = first.signingKey().kid;
    const oldToken = await signWith(first);
    const { kid } = await rotateKeys({ file, algorithm: 'EdDSA', retainS: RETAIN_S, now: () => t0 });

    const lastMoment = await load({ now: () => t0 + RETAIN_S * 1000 - 1 });
    expect(lastMoment.publicJwks().keys.map((k) => k.kid)).toEqual([kid, oldKid]);
    expect(await verifiesWith(lastMoment, oldToken)).toBe(true);

    const pruned = await load({ now: () => t0 + RETAIN_S * 1000 });
    expect(pruned.publicJwks().keys.map((k) => k.kid)).toEqual([kid]);
    await expect(pruned.getVerificationKey({ alg: 'EdDSA', kid: oldKid })).rejects.toMatchObject({ reason: 'unknown signing key' });

    // Loading prunes in memory only; the next write drops the key from the file.
    expect((await readStored(file)).keys.map((k) => k.kid)).toContain(oldKid);
    const next = await rotateKeys({ file, algorithm: 'EdDSA', retainS: RETAIN_S, now: () => t0 + RETAIN_S * 1000 });
    expect((await readStored(file)).keys.map((k) => k.kid)).toEqual([kid, next.kid]);
  });

  it('drops a retired key that runs out of retention while the process runs', async () => {
    const file = join(folder, 'keys.json');
    let now = Date.parse('2030-01-01T00:00:00Z');
    const t0 = now;
    const first = await load({ now: () => now });
    const oldKid = first.signingKey().kid;
    await rotateKeys({ file, algorithm: 'EdDSA', retainS: RETAIN_S, now: () => t0 });
    const keys = await load({ now: () => now });
    await expect(keys.getVerificationKey({ alg: 'EdDSA', kid: oldKid })).resolves.toBeDefined();

    now = t0 + RETAIN_S * 1000;
    await expect(keys.getVerificationKey({ alg: 'EdDSA', kid: oldKid })).rejects.toMatchObject({ reason: 'unknown signing key' });
    expect(keys.publicJwks().keys.map((k) => k.kid)).not.toContain(oldKid);
  });

  it('rotates to a key of the configured algorithm when the file signs with another', async () => {
    const file = join(folder, 'keys.json');
    const eddsa = await load({ algorithm: 'EdDSA' });
    const eddsaKid = eddsa.signingKey().kid;
    const eddsaToken = await signWith(eddsa);

    const { logger, lines } = capturingLogger();
    const es256 = await load({ algorithm: 'ES256', logger });
    expect(es256.algorithm).toBe('ES256');
    expect(es256.signingKey().alg).toBe('ES256');
    expect(es256.signingKey().kid).not.toBe(eddsaKid);
    expect(es256.algorithms()).toEqual(['ES256', 'EdDSA']);
    expect(await verifiesWith(es256, eddsaToken)).toBe(true);
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'signing algorithm changed: rotated the signing key', previousKid: eddsaKid, alg: 'ES256' }));
    const stored = await readStored(file);
    expect(stored.keys.map((k) => [k.alg, k.retiredAt === undefined])).toEqual([
      ['EdDSA', false],
      ['ES256', true],
    ]);
  });
});

describe('watch', () => {
  it('picks up a rotation done by `gatehouse keys rotate` without a restart', async () => {
    const file = join(folder, 'keys.json');
    const keys = await load({ watch: true });
    const oldKid = keys.signingKey().kid;
    const oldToken = await signWith(keys);

    const reload = once(keys, 'reload');
    const cli = cliIo(file);
    expect(await runKeysCommand(['rotate'], cli.io)).toBe(0);
    const newKid = cli.out().trim();
    expect(newKid).toMatch(/^[\w-]{43}$/);
    expect(newKid).not.toBe(oldKid);

    expect(await reload).toEqual([true]);
    expect(keys.signingKey().kid).toBe(newKid);
    expect(keys.publicJwks().keys.map((k) => k.kid)).toEqual([newKid, oldKid]);
    expect(await verifiesWith(keys, oldToken)).toBe(true);
  });

  it('logs an unreadable file and keeps the keys it has', async () => {
    const file = join(folder, 'keys.json');
    const { logger, lines, raw } = capturingLogger();
    const keys = await load({ watch: true, logger });
    const kid = keys.signingKey().kid;
    const token = await signWith(keys);
    const original = await readFile(file, 'utf8');
    const secret = (JSON.parse(original) as KeysFile).keys[0]!.jwk.d!;

    // Truncated mid-key, as a hand edit gone wrong would leave it.
    const refused = reloaded(keys);
    await writeFile(file, original.slice(0, original.indexOf(secret) + 10));
    expect(await refused).toBe(false);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, msg: 'cannot reload the keys file; the keys in memory stay in use' }));
    expect(keys.signingKey().kid).toBe(kid);
    expect(await verifiesWith(keys, token)).toBe(true);
    expect(raw.join('')).not.toContain(secret.slice(0, 10));

    // Fixed again: picked up again.
    const { kid: newKid } = await rotateKeys({ file: join(folder, 'other.json'), algorithm: 'EdDSA', retainS: RETAIN_S });
    const taken = reloaded(keys, (applied) => applied);
    await writeFile(file, await readFile(join(folder, 'other.json'), 'utf8'));
    await taken;
    expect(keys.signingKey().kid).toBe(newKid);
  });

  it('stops watching on close', async () => {
    const file = join(folder, 'keys.json');
    const keys = await load({ watch: true });
    const kid = keys.signingKey().kid;
    let reloads = 0;
    keys.on('reload', () => reloads++);
    // Watches of one file share one poller: a change reaches both or neither in the same turn.
    const witness = await load({ watch: true });
    keys.close();

    // Two changes, each seen by the witness: a reload the closed set had started on the first has ended by the second.
    for (let i = 0; i < 2; i++) {
      const seen = once(witness, 'reload');
      const { kid: rotated } = await rotateKeys({ file, algorithm: 'EdDSA', retainS: RETAIN_S });
      await seen;
      expect(witness.signingKey().kid).toBe(rotated);
    }
    expect(reloads).toBe(0);
    expect(keys.signingKey().kid).toBe(kid);
  });
});

describe('a read-only load (a cluster worker)', () => {
  it('refuses a missing file and creates none', async () => {
    const file = join(folder, 'keys.json');
    await expect(load({ readOnly: true })).rejects.toThrow(new KeysFileError(file, 'missing'));
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a file in which no key may sign', async () => {
    const file = join(folder, 'keys.json');
    await load();
    const stored = await readStored(file);
    stored.keys[0]!.retiredAt = new Date().toISOString();
    await writeFile(file, JSON.stringify(stored));
    await expect(load({ readOnly: true })).rejects.toThrow(/no key may sign/);
  });

  it('signs with the file’s key even after an algorithm change, warns, and leaves the file as it is', async () => {
    const file = join(folder, 'keys.json');
    const eddsa = await load({ algorithm: 'EdDSA' });
    const before = await readFile(file, 'utf8');
    const { logger, lines } = capturingLogger();

    const worker = await load({ algorithm: 'ES256', readOnly: true, logger });
    expect(worker.signingKey()).toMatchObject({ kid: eddsa.signingKey().kid, alg: 'EdDSA' });
    expect(await readFile(file, 'utf8')).toBe(before);
    expect(lines).toContainEqual(
      expect.objectContaining({ level: 40, msg: 'the keys file signs with another algorithm than configured', configured: 'ES256', alg: 'EdDSA' }),
    );
  });
});

describe('verification keys', () => {
  it.each(SIGNING_ALGORITHMS)('publishes %s public keys only, each with kid, alg and use', async (alg) => {
    const keys = await load({ algorithm: alg });
    const [jwk] = keys.publicJwks().keys as [JWK];
    for (const member of PRIVATE_MEMBERS) expect(jwk).not.toHaveProperty(member);
    expect(jwk).toMatchObject({ kid: keys.signingKey().kid, alg, use: 'sig' });
    expect(await calculateJwkThumbprint(jwk)).toBe(jwk.kid);
    // Built once: the same object until the keys change.
    expect(keys.publicJwks()).toBe(keys.publicJwks());
  });

  it('hands out a key only for its kid and its own algorithm', async () => {
    const keys = await load({ algorithm: 'EdDSA' });
    const { kid } = keys.signingKey();
    await expect(keys.getVerificationKey({ alg: 'EdDSA', kid })).resolves.toBeDefined();
    await expect(keys.getVerificationKey({ alg: 'ES256', kid })).rejects.toMatchObject({ reason: 'algorithm not allowed' });
    await expect(keys.getVerificationKey({ alg: 'EdDSA', kid: 'nope' })).rejects.toMatchObject({ reason: 'unknown signing key' });
    await expect(keys.getVerificationKey({ alg: 'EdDSA' })).rejects.toBeInstanceOf(TokenError);
    await expect(keys.getVerificationKey({ alg: 'EdDSA' })).rejects.toMatchObject({ reason: 'unknown signing key' });
    await expect(keys.getVerificationKey({ alg: 'EdDSA', kid: '__proto__' })).rejects.toMatchObject({ reason: 'unknown signing key' });
  });
});

describe('a bad keys file', () => {
  async function storedFile(): Promise<KeysFile> {
    await load();
    return readStored();
  }

  it('refuses a key whose kid is not its thumbprint', async () => {
    const stored = await storedFile();
    stored.keys[0]!.kid = 'not-the-thumbprint';
    await writeFile(join(folder, 'keys.json'), JSON.stringify(stored));
    await expect(load()).rejects.toThrow(/key 0 \(not-the-thumbprint\): the kid is not the thumbprint of the key/);
  });

  it('refuses a key that is not of its entry’s algorithm', async () => {
    const stored = await storedFile();
    stored.keys[0]!.alg = 'ES256';
    await writeFile(join(folder, 'keys.json'), JSON.stringify(stored));
    await expect(load({ algorithm: 'ES256' })).rejects.toThrow(/not a usable ES256 key/);
  });

  it('refuses a public key in place of a private one', async () => {
    const stored = await storedFile();
    delete stored.keys[0]!.jwk.d;
    await writeFile(join(folder, 'keys.json'), JSON.stringify(stored));
    await expect(load()).rejects.toThrow(/not a private key/);
  });

  it('refuses another version and invalid JSON without quoting the file', async () => {
    const stored = await storedFile();
    await writeFile(join(folder, 'keys.json'), JSON.stringify({ ...stored, version: 2 }));
    await expect(load()).rejects.toThrow(KeysFileError);
    await expect(load()).rejects.toThrow(/unsupported version/);

    const text = JSON.stringify(stored);
    await writeFile(join(folder, 'keys.json'), text.slice(0, -5));
    const error = await load().then(
      () => undefined,
      (e: unknown) => e as KeysFileError,
    );
    expect(error?.message).toMatch(/not valid JSON$/);
    expect(error?.cause).toBeUndefined();
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(stored.keys[0]!.jwk.d!);
  });
});

describe('gatehouse keys', () => {
  it('lists kid, algorithm, status and dates, never key material', async () => {
    const file = join(folder, 'keys.json');
    await load();
    const { kid } = await rotateKeys({ file, algorithm: 'ES256', retainS: RETAIN_S });
    const cli = cliIo(file);
    expect(await runKeysCommand(['list'], cli.io)).toBe(0);
    const output = cli.out();
    const [header, first, second] = output.trim().split('\n');
    expect(header!.split(/\s+/)).toEqual(['KID', 'ALG', 'STATUS', 'CREATED', 'RETIRED']);
    expect(first!.split(/\s+/).slice(0, 3)).toEqual([kid, 'ES256', 'signing']);
    expect(second!.split(/\s+/).slice(1, 3)).toEqual(['EdDSA', 'retired']);
    for (const key of (await readStored(file)).keys) {
      for (const member of PRIVATE_MEMBERS) {
        const value = (key.jwk as Record<string, unknown>)[member];
        if (typeof value === 'string') expect(output).not.toContain(value);
      }
    }
    expect(await listKeys({ file, retainS: RETAIN_S })).toHaveLength(2);
  });

  it('answers bad usage with one line on stderr, pointing at --help, and exit code 2', async () => {
    const file = join(folder, 'keys.json');
    for (const args of [[], ['spin'], ['rotate', 'now'], ['list', '--all']]) {
      const cli = cliIo(file);
      expect(await runKeysCommand(args, cli.io)).toBe(2);
      expect(cli.err(), args.join(' ')).toMatch(/^gatehouse: [^\n]+ \(see gatehouse keys( [a-z]+)? --help\)\n$/);
      expect(cli.out()).toBe('');
    }
  });

  it('fails listing a missing keys file with exit code 1', async () => {
    const cli = cliIo(join(folder, 'missing.json'));
    expect(await runKeysCommand(['list'], cli.io)).toBe(1);
    expect(cli.err()).toContain('no keys file');
  });
});
