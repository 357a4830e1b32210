// What every fuzz test shares: how many runs, the answers that count as
// documented, a gateway with one protected and one public route in front of
// a real upstream, and a watch for crashes of the process the gateway runs in.
//
// FUZZ_RUNS sets the runs per property (100 by default, so the folder
// stays quick in the suite; thousands for a long local run). A failure prints
// its seed and path: FUZZ_SEED and FUZZ_PATH replay exactly that run.
import { STATUS_CODES, type IncomingHttpHeaders } from 'node:http';
import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { send, type ClientRequestOptions } from '../helpers/http-client.js';
import { startUpstream, echo, type Upstream } from '../helpers/upstream.js';

function envInt(name: string): number | undefined {
  const value = process.env[name];
  return value !== undefined && /^-?\d+$/.test(value) ? Number(value) : undefined;
}

/** Runs per property. */
export const FUZZ_RUNS = envInt('FUZZ_RUNS') ?? 100;

/** Longest wait for one answer: a gateway that does not answer by then hangs. */
export const ANSWER_TIMEOUT_MS = 5_000;

/**
 * The suite runs on a fixed seed, so that CI answers the same for the same
 * code; `FUZZ_SEED=random` (or any number) explores further, and what it finds
 * is kept as a regular test (found-by-fuzzing.test.ts).
 */
const FIXED_SEED = 20_261_123;
const seed = process.env.FUZZ_SEED === 'random' ? undefined : (envInt('FUZZ_SEED') ?? FIXED_SEED);
const path = process.env.FUZZ_PATH;
fc.configureGlobal({ numRuns: FUZZ_RUNS, ...(seed !== undefined && { seed }) });
// A run that outlives every request's own timeout is a hang of the property itself.
fc.installGlobalPlugin(fc.timeout(ANSWER_TIMEOUT_MS * 3));

/** fc.assert, replaying FUZZ_PATH when given (a path belongs to one property: give it with the test's name filter). */
export function fuzz<T>(property: fc.IAsyncProperty<T>): Promise<void>;
export function fuzz<T>(property: fc.IProperty<T>): void;
export function fuzz<T>(property: fc.IAsyncProperty<T> | fc.IProperty<T>): Promise<void> | void {
  const replay = path !== undefined ? { path } : {};
  return property.isAsync() ? fc.assert(property as fc.IAsyncProperty<T>, replay) : fc.assert(property as fc.IProperty<T>, replay);
}

/** The test's own time limit: room for every run (at `perRunMs` each) and for shrinking a failure. */
export function fuzzTimeout(perRunMs = 20): number {
  return 30_000 + FUZZ_RUNS * perRunMs * 3;
}

/**
 * Uncaught exceptions and unhandled rejections in this process: the gateway
 * runs in it, so any of them is a crash of the gateway. Checked after every test.
 */
export function failOnCrashes(): void {
  const crashes: unknown[] = [];
  const record = (error: unknown) => crashes.push(error);
  beforeAll(() => {
    process.on('uncaughtException', record);
    process.on('unhandledRejection', record);
  });
  afterEach(() => {
    expect(crashes.splice(0).map(String)).toEqual([]);
  });
  afterAll(() => {
    process.off('uncaughtException', record);
    process.off('unhandledRejection', record);
  });
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One request on a fresh connection, bounded in time: no answer in time fails the run. */
export async function ask(url: string, options: ClientRequestOptions = {}): Promise<Answer> {
  const { status, headers, body } = await send(url, { timeoutMs: ANSWER_TIMEOUT_MS, ...options });
  return { status, headers, body };
}

/**
 * A refusal as the gateway documents it: one of `statuses` (all 4xx), JSON,
 * one `$diagnoses` error whose `$detail` names that status, no stack trace.
 */
export function expectDiagnoses(answer: Answer, statuses: readonly number[]): string {
  expect(statuses, `answered ${answer.status}: ${answer.body.toString('utf8').slice(0, 300)}`).toContain(answer.status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body.toString('utf8')) as unknown;
  expect(body).toEqual({
    $diagnoses: [{ $severity: 'error', $message: expect.any(String), $detail: expect.stringMatching(/^\d{3} \(/) }],
  });
  const detail = (body as { $diagnoses: Array<{ $detail: string }> }).$diagnoses[0]!.$detail;
  expect(detail.startsWith(`${answer.status} (${STATUS_CODES[answer.status]}) - `)).toBe(true);
  expect(detail).not.toMatch(/\n\s+at |node:internal|\.[cm]?[jt]s:\d+/);
  return detail;
}

/** A token set (spec 2.1). */
export function expectTokenSet(answer: Answer): TokenSetBody {
  expect(answer.status, answer.body.toString('utf8').slice(0, 300)).toBe(200);
  const body = JSON.parse(answer.body.toString('utf8')) as TokenSetBody;
  expect(body).toEqual({
    access_token: expect.any(String),
    refresh_token: expect.any(String),
    expires_in: expect.any(Number),
    refresh_expires_in: expect.any(Number),
    token_type: 'bearer',
  });
  return body;
}

/** No request was answered with a server error (the log has every one of them). */
export function expectNoServerErrors(gw: TestGateway): void {
  const serverErrors = gw.logs.entries().filter((entry) => (entry.level as number) >= 50);
  expect(serverErrors).toEqual([]);
}

/** At least 32 characters, as the config demands. */
export const FUZZ_SERVICE_TOKEN = '1IFSEz2EMuGM5z4XJrBJ6+FMFvYHSwnKAdCemrF3jnU=';

export interface FuzzBench {
  gw: TestGateway;
  upstream: Upstream;
  /** Alice's token set: her access and refresh tokens are the valid bearer tokens. */
  alice: TokenSetBody;
}

/**
 * A gateway with `/svc` (bearer required) and `/public` (no auth) in front of
 * one echo upstream, which answers `POST …/jobs` with a 202 and a new requestId.
 */
export function fuzzBench(): () => FuzzBench {
  let bench: FuzzBench | undefined;
  beforeAll(async () => {
    const upstream = await startUpstream((req, res) => {
      if (req.method === 'POST' && req.url?.endsWith('/jobs')) {
        req.resume();
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ requestId: crypto.randomUUID() }));
        return;
      }
      echo(req, res);
    });
    const gw = await startTestGateway({
      config: {
        log: { level: 'info' },
        requests: { serviceToken: FUZZ_SERVICE_TOKEN, maxWaitS: 1 },
        // What is fuzzed here is each body's answer: a wrong credential must be a 401 every
        // time, not a 429 after the fifth (throttling has tests of its own, test/limits/).
        limits: { login: { enabled: false } },
        // A long run (FUZZ_RUNS) outlives a 60 s access token; expiry has tests of its own.
        tokens: { accessTokenTtlS: 3600 },
        routes: [
          { name: 'svc', prefix: '/svc', upstreams: [upstream.url] },
          { name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' },
        ],
      },
    });
    bench = { gw, upstream, alice: await login(gw.url, 'alice', 'alice-password-1') };
  });
  afterAll(async () => {
    await bench?.gw.close();
    await bench?.upstream.close();
  });
  return () => {
    if (!bench) throw new Error('the fuzz bench has not started');
    return bench;
  };
}

/** Text as a client may write it in a header value (Node refuses to send anything else). */
export const headerText = (maxLength = 64): fc.Arbitrary<string> =>
  fc.string({
    unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(9), fc.integer({ min: 0x80, max: 0xff })).map((c) => String.fromCharCode(c)),
    maxLength,
  });

/**
 * A string mutated at one place: a character replaced, inserted or removed,
 * or the string cut short. Mutations of valid input find the edges that
 * purely random input rarely reaches.
 */
export function mutated(base: string, alphabet: fc.Arbitrary<string> = fc.string({ unit: 'binary', minLength: 1, maxLength: 1 })): fc.Arbitrary<string> {
  return fc.tuple(fc.nat({ max: Math.max(0, base.length) }), fc.constantFrom('replace', 'insert', 'delete', 'truncate'), alphabet).map(([at, how, text]) => {
    switch (how) {
      case 'replace':
        return base.slice(0, at) + text + base.slice(at + 1);
      case 'insert':
        return base.slice(0, at) + text + base.slice(at);
      case 'delete':
        return base.slice(0, at) + base.slice(at + 1);
      default:
        return base.slice(0, at);
    }
  });
}
