// `server.workers` > 1 after a change of `tokens.algorithm`: the primary alone
// decides the rotation and writes the keys file before it forks; the workers
// only read it. Were each worker to rotate on its own, each would sign with a
// key of its own that the others do not publish, and tokens would verify on
// one worker and fail on the next.
import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runKeysCommand } from '../../src/cli/keys.js';
import { loadKeySet } from '../../src/tokens/keyset.js';
import type { KeysFile } from '../../src/tokens/keys-file.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';

const WORKERS = 3;
/** Enough requests on fresh connections for the primary's round robin to hand each worker every token more than once. */
const ROUNDS = 2 * WORKERS;
const RETAIN_S = 86_400;
const ISSUER_AUDIENCE = { audience: 'gatehouse' };

interface LogLine {
  msg: string;
  role?: string;
  kid?: string;
  [key: string]: unknown;
}

let redis: RedisServerHandle;
let dir: string;
let keysFile: string;
let primary: ChildProcess;
let url: string;
const lines: LogLine[] = [];
/** Emits each log line of the primary and its workers as it arrives. */
const log = new EventEmitter();

/** Resolves once `count` log lines have met `accept`, counting those already seen. */
async function logged(accept: (line: LogLine) => boolean, count: number): Promise<LogLine[]> {
  while (lines.filter(accept).length < count) await once(log, 'line');
  return lines.filter(accept);
}

async function login(): Promise<string> {
  const response = await send(`${url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
  });
  expect(response.status).toBe(200);
  return (JSON.parse(response.body.toString('utf8')) as { access_token: string }).access_token;
}

/** A protected route: 404 for an unknown request id once the bearer token verifies, 401 when it does not. */
async function protectedStatus(token: string): Promise<number> {
  const response = await send(`${url}/api/v1/requests/${crypto.randomUUID()}/status`, { headers: { authorization: `Bearer ${token}` } });
  return response.status;
}

async function servedJwks(): Promise<JSONWebKeySet> {
  return JSON.parse((await send(`${url}/.well-known/jwks.json`)).body.toString('utf8')) as JSONWebKeySet;
}

async function storedKeys(): Promise<KeysFile['keys']> {
  return (JSON.parse(await readFile(keysFile, 'utf8')) as KeysFile).keys;
}

/** Every token verifies against every JWKS the workers serve, and every worker accepts it. */
async function expectVerifiedEverywhere(tokens: string[]): Promise<void> {
  const documents = await Promise.all(Array.from({ length: ROUNDS }, servedJwks));
  for (const document of documents) expect(document).toEqual(documents[0]);
  for (const token of tokens) {
    for (const document of documents) {
      await expect(jwtVerify(token, createLocalJWKSet(document), ISSUER_AUDIENCE)).resolves.toBeDefined();
    }
    for (let i = 0; i < ROUNDS; i++) expect(await protectedStatus(token)).toBe(404);
  }
}

beforeAll(async () => {
  redis = await startRedisServer();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-keys-workers-'));
  keysFile = join(dir, 'keys.json');
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  // What an earlier run on the default algorithm left behind.
  (await loadKeySet({ file: keysFile, algorithm: 'EdDSA', retainS: RETAIN_S, logger: pino({ level: 'silent' }) })).close();

  const [port, adminPort] = [await freePort(), await freePort()];
  url = `http://127.0.0.1:${port}`;
  const configFile = join(dir, 'gatehouse.yaml');
  await writeFile(
    configFile,
    [
      `server: {host: 127.0.0.1, port: ${port}, workers: ${WORKERS}}`,
      `admin: {host: 127.0.0.1, port: ${adminPort}}`,
      'log: {level: info, access: false}',
      `store: {url: "${redis.url}", keyPrefix: "${uniquePrefix()}"}`,
      'identity: {provider: local, usersFile: ./users.yaml}',
      // Load shedding reads this machine's event loop, which other tests make late at random.
      'limits: {loadShedding: {enabled: false}}',
      `tokens: {issuer: "${url}", keysFile: ./keys.json, algorithm: ES256, refreshTokenTtlS: ${RETAIN_S}}`,
    ].join('\n'),
  );
  primary = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', configFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  // Read to the end: a pipe nobody reads fills up and stalls the workers.
  primary.stderr!.pipe(new PassThrough()).resume();
  createInterface({ input: primary.stdout! }).on('line', (text) => {
    if (!text.startsWith('{')) return;
    lines.push(JSON.parse(text) as LogLine);
    log.emit('line');
  });
  // Each worker logs this once, when it takes connections.
  await logged((line) => line.msg === 'gatehouse listening', WORKERS);
}, 180_000);

afterAll(async () => {
  if (primary && primary.exitCode === null) {
    const exited = once(primary, 'exit');
    primary.kill('SIGTERM');
    await exited;
  }
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('signing keys with several workers', () => {
  it('rotates once, in the primary, after a change of tokens.algorithm: every token from any worker verifies on every worker', async () => {
    const rotations = lines.filter((line) => line.msg === 'signing algorithm changed: rotated the signing key');
    expect(rotations).toHaveLength(1);
    expect(rotations[0]).toMatchObject({ role: 'primary', alg: 'ES256', previousAlg: 'EdDSA' });
    const stored = await storedKeys();
    expect(stored.map((k) => [k.alg, k.retiredAt === undefined])).toEqual([
      ['EdDSA', false],
      ['ES256', true],
    ]);

    const tokens = [];
    for (let i = 0; i < ROUNDS; i++) tokens.push(await login());
    for (const token of tokens) expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES256', kid: stored[1]!.kid });
    await expectVerifiedEverywhere(tokens);
    // Workers wrote nothing.
    expect(await storedKeys()).toEqual(stored);
  });

  it('takes an operator’s `keys rotate` into every worker', async () => {
    const before = [await login()];
    const stdout = new PassThrough();
    const out: Buffer[] = [];
    stdout.on('data', (chunk: Buffer) => out.push(chunk));
    const io = { keysFile, algorithm: 'ES256' as const, retainS: RETAIN_S, stdout, stderr: new PassThrough() };
    expect(await runKeysCommand(['rotate'], io)).toBe(0);
    const kid = Buffer.concat(out).toString('utf8').trim();

    // Each worker logs this once for the change; the logins below then show that each signs with the new key.
    await logged((line) => line.msg === 'reloaded the signing keys' && line.kid === kid, WORKERS);
    const after = [];
    for (let i = 0; i < ROUNDS; i++) after.push(await login());
    for (const token of after) expect(decodeProtectedHeader(token).kid).toBe(kid);
    await expectVerifiedEverywhere([...before, ...after]);
  });
});
