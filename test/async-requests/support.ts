// Shared by the asynchronous-request tests: both stores, a scriptable
// upstream that answers 202s, clients for the status endpoint, the internal
// API and /metrics, and a store wrapper that can delay or fail on demand.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino } from 'pino';
import { createStore } from '../../src/store/create-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { storeUnavailable } from '../../src/store/store-unavailable.js';
import type { RequestRecord, RequestStatusChange, SessionRecord, Store, TerminalStatus, TransitionOutcome } from '../../src/store/store.js';
import { login, startTestGateway, type StartOptions, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { testRedisUrl } from '../helpers/redis-server.js';
import { WrappedStore } from '../helpers/wrapped-store.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

export type StoreKind = 'memory' | 'redis';
export const STORE_KINDS: readonly StoreKind[] = ['memory', 'redis'];

/** At least 32 characters, as the config demands. */
export const SERVICE_TOKEN = 'SxgMXGmB7O4BaYi1vGB056P0rCKnlis4GWnTFyH2amM=';

const silent = pino({ level: 'silent' });

/** A fresh store of the kind; Redis ones get a key prefix of their own, or the one given (to share). */
export async function makeStore(kind: StoreKind, redisUrl: string, keyPrefix = `test:${randomUUID()}:`): Promise<Store> {
  if (kind === 'memory') return new MemoryStore();
  return createStore({ url: redisUrl, keyPrefix }, silent);
}

/** Members that never reach the store's connection, and answer at once: listeners' registrations, what was last read, the end. */
const NEVER_FAILS = /^(on[A-Z]|revocationFeedInterrupted$|evictionPolicies$|close$)/;

/**
 * A real store that counts calls, can hold request creation back (to prove a
 * 202 waits for its record) and can fail like a store that is down, for the
 * in-memory half of the fault tests.
 */
export class TestStore extends WrappedStore {
  down = false;
  /** While down: when the store says a retry may succeed (its failures' Retry-After). */
  retryInMs = 0;
  /** Swallow status-change events, as a Redis subscriber that is disconnected misses them. */
  muteStatusChanges = false;
  /** Status-change events swallowed so far. */
  muted = 0;
  #createsHeld: Promise<void> | undefined;
  readonly #feedResumed = new Set<() => void>();
  readonly calls = { getSession: 0, getRequest: 0, createRequest: 0 };
  /** Reads of a request record the inner store has answered. */
  readonly answered = { getRequest: 0 };
  /**
   * Ids in the order the inner store first confirmed holding them: created,
   * or found there already (a write that timed out on the client's side may
   * land later, e.g. when ioredis replays its offline queue on reconnect).
   */
  readonly created: string[] = [];

  protected override around(member: string, call: () => unknown): unknown {
    if (NEVER_FAILS.test(member)) return call();
    return (async () => {
      this.#check();
      return call();
    })();
  }

  #check(): void {
    if (this.down) throw storeUnavailable(new Error('the store is down'), this.retryInMs);
  }

  /**
   * Makes every createRequest wait (before it reaches the inner store, or
   * fails as down) until the returned function is called.
   */
  holdCreates(): () => void {
    let release!: () => void;
    this.#createsHeld = new Promise<void>((resolve) => {
      release = resolve;
    });
    return () => {
      this.#createsHeld = undefined;
      release();
    };
  }

  override async getSession(sid: string): Promise<SessionRecord | null> {
    this.calls.getSession += 1;
    this.#check();
    return this.inner.getSession(sid);
  }
  override onRevocationFeedResumed(listener: () => void): () => void {
    const registration = () => listener();
    this.#feedResumed.add(registration);
    const fromInner = this.inner.onRevocationFeedResumed(listener);
    return () => {
      this.#feedResumed.delete(registration);
      fromInner();
    };
  }
  /** Tells the listeners what a Redis store tells them when its subscriber is back. */
  resumeFeed(): void {
    for (const listener of [...this.#feedResumed]) listener();
  }
  override async createRequest(record: RequestRecord, retentionMs: number): Promise<boolean> {
    this.calls.createRequest += 1;
    await this.#createsHeld;
    this.#check();
    const created = await this.inner.createRequest(record, retentionMs);
    if (!this.created.includes(record.id)) this.created.push(record.id);
    return created;
  }
  override async getRequest(id: string): Promise<RequestRecord | null> {
    this.calls.getRequest += 1;
    this.#check();
    const record = await this.inner.getRequest(id);
    this.answered.getRequest += 1;
    return record;
  }
  override async transitionRequest(id: string, status: TerminalStatus, retentionMs: number, now?: number): Promise<TransitionOutcome> {
    this.#check();
    return this.inner.transitionRequest(id, status, retentionMs, now);
  }
  override onRequestStatusChanged(listener: (change: RequestStatusChange) => void): () => void {
    return this.inner.onRequestStatusChanged((change) => {
      if (this.muteStatusChanges) this.muted += 1;
      else listener(change);
    });
  }
}

export type Script = (req: IncomingMessage, res: ServerResponse) => void;

/** An upstream whose answer per path (query ignored) the test decides; by default a 202 with a fresh requestId. */
export interface ScriptedUpstream extends Upstream {
  on(path: string, script: Script): void;
  /** The ids the default script handed out, in order. */
  issued: string[];
}

export async function startScriptedUpstream(): Promise<ScriptedUpstream> {
  const scripts = new Map<string, Script>();
  const issued: string[] = [];
  const upstream = await startUpstream((req, res) => {
    // The request body is not needed; reading it lets keep-alive work.
    req.resume();
    const path = (req.url ?? '/').split('?', 1)[0]!;
    const script = scripts.get(path);
    if (script) {
      script(req, res);
      return;
    }
    const id = randomUUID();
    issued.push(id);
    accepted(res, { requestId: id });
  });
  return Object.assign(upstream, { on: (path: string, script: Script) => void scripts.set(path, script), issued });
}

/** Answers 202 with this JSON body (or these exact bytes). */
export function accepted(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  res.writeHead(202, { 'content-type': 'application/json', 'content-length': bytes.length, ...headers });
  res.end(bytes);
}

export interface StatusAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface PollOptions {
  method?: 'GET' | 'POST';
  /** `/api/v1` (default) or `/v1`. */
  base?: '/api/v1' | '/v1';
  wait?: string;
  body?: string;
  headers?: Record<string, string>;
}

export async function poll(url: string, id: string, token: string | undefined, options: PollOptions = {}): Promise<StatusAnswer> {
  const query = options.wait === undefined ? '' : `?wait=${options.wait}`;
  const response = await fetch(`${url}${options.base ?? '/api/v1'}/requests/${id}/status${query}`, {
    method: options.method ?? 'GET',
    headers: { accept: 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...options.headers },
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

export interface PutAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function reportStatus(
  adminUrl: string,
  id: string,
  body: unknown,
  options: { token?: string | null; contentType?: string } = {},
): Promise<PutAnswer> {
  const token = options.token === undefined ? SERVICE_TOKEN : options.token;
  const response = await fetch(`${adminUrl}/internal/v1/requests/${id}/status`, {
    method: 'PUT',
    headers: {
      'content-type': options.contentType ?? 'application/json',
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : (JSON.parse(text) as unknown) };
}

/** One sample of a metric from the admin listener's /metrics (0 when absent). */
export async function metric(adminUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-z_]+)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = (match[2] ?? '').split(',').filter(Boolean);
    if (wanted.length === have.length && wanted.every((label) => have.includes(label))) return Number(match[3]);
  }
  return 0;
}

/** For vi.waitFor: what a test waits for happens in milliseconds, but the machine may be busy. */
export const EVENTUALLY = { timeout: 5_000, interval: 20 };

/** The 404 every hidden or unknown request gets. */
export const NOT_FOUND_BODY = {
  $diagnoses: [{ $severity: 'error', $message: 'No such request.', $detail: '404 (Not Found) - not_found: unknown request id' }],
};

/** A gateway over a TestStore of the given kind, a scripted upstream, and alice and bob logged in. */
export interface RequestsFixture {
  store: TestStore;
  /** The Redis the store uses (kind 'redis'), for a second instance of its own. */
  redisUrl: string | undefined;
  keyPrefix: string;
  up: ScriptedUpstream;
  gw: TestGateway;
  alice: TokenSetBody;
  bob: TokenSetBody;
  close(): Promise<void>;
}

export async function startRequestsFixture(kind: StoreKind, config: (up: ScriptedUpstream) => StartOptions['config']): Promise<RequestsFixture> {
  const redis = kind === 'redis' ? await testRedisUrl() : undefined;
  const keyPrefix = `test:${randomUUID()}:`;
  const store = new TestStore(await makeStore(kind, redis?.url ?? '', keyPrefix));
  const up = await startScriptedUpstream();
  const gw = await startTestGateway({ store, config: config(up) });
  const [alice, bob] = await Promise.all([login(gw.url, 'alice', 'alice-password-1'), login(gw.url, 'bob', 'bob-password-1')]);
  return {
    store,
    redisUrl: redis?.url,
    keyPrefix,
    up,
    gw,
    alice,
    bob,
    async close() {
      await gw.close();
      await store.close();
      await up.close();
      await redis?.close();
    },
  };
}
