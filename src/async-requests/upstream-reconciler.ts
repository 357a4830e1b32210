// A route may name the upstream's own status URL (`async.statusUrlTemplate`).
// Such an upstream need not report outcomes through the internal API: while
// a record is pending, a client's poll makes the gateway ask the upstream,
// and a terminal answer is recorded like any other transition.
//
// The upstream is protected from its clients' polling: one question per id
// at a time however many clients poll (single flight), at most one per
// `statusPollIntervalMs` per id, each bounded by `statusTimeoutMs`. And it
// cannot do harm by failing: an upstream that is down, slow or answering
// nonsense leaves the record pending — only an explicit terminal answer is
// recorded, never an inferred failure.
import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { ProxyRoutes } from '../proxy/proxy-routes.js';
import type { UpstreamTls } from '../proxy/upstream-tls.js';
import type { RequestRecord, RequestStatus, TerminalStatus } from '../store/store.js';
import type { RequestTracker } from './request-tracker.js';

export interface ReconcileSettings {
  statusPollIntervalMs: number;
  statusTimeoutMs: number;
  /** The route's TLS to its upstreams (CAs, SNI, client certificate): an https:// status URL is asked with it too. */
  tls?: UpstreamTls | undefined;
}

export interface UpstreamReconcilerOptions {
  tracker: RequestTracker;
  logger: Logger;
  /**
   * The current settings of the route a record was made on (by its name);
   * undefined when no route of that name exists any more (defaults apply).
   */
  routeSettings: (route: string) => ReconcileSettings | undefined;
  defaults: ReconcileSettings;
  /** How many ids' last question times are remembered (the interval is kept per id). */
  maxTracked?: number;
}

const DEFAULT_MAX_TRACKED = 10_000;
const AGENT_OPTIONS = { connections: 32, keepAliveTimeout: 10_000 };
/** A status answer is a few bytes; anything longer is not one. */
const MAX_ANSWER_BYTES = 16 * 1024;
const STATUSES: ReadonlySet<string> = new Set<RequestStatus>(['pending', 'completed', 'failed']);

export class UpstreamReconciler {
  readonly #options: UpstreamReconcilerOptions;
  readonly #logger: Logger;
  /** Questions under way, by id: concurrent polls share one. Bounded by the polls in flight. */
  readonly #inFlight = new Map<string, Promise<RequestStatus>>();
  /** When each id's upstream was last asked. Bounded; an evicted id may be asked a little early, never more than once per poll. */
  readonly #lastAsked: LRUCache<string, number>;
  /** Our own connection pool, so close() ends its sockets and a slow upstream cannot hold the proxy's. */
  readonly #agent = new Agent(AGENT_OPTIONS);
  /** Pools for routes with TLS settings of their own, by those settings (`poolKey`). */
  readonly #tlsAgents = new Map<string, Agent>();

  constructor(options: UpstreamReconcilerOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'upstream-reconciler' });
    this.#lastAsked = new LRUCache<string, number>({ max: options.maxTracked ?? DEFAULT_MAX_TRACKED });
  }

  /** How often at most this record's upstream is asked. */
  intervalMs(record: RequestRecord): number {
    return this.#settings(record).statusPollIntervalMs;
  }

  /**
   * The status to report for a record: its own, unless it is pending and
   * has a status URL, in which case the upstream may be asked (see the top
   * of this file). Rejects only with `store_unavailable`, when the upstream's
   * terminal answer cannot be recorded: never a status that was not recorded.
   */
  reconcile(record: RequestRecord): Promise<RequestStatus> {
    if (record.status !== 'pending' || record.statusUrl === undefined) return Promise.resolve(record.status);
    const shared = this.#inFlight.get(record.id);
    if (shared !== undefined) return shared;
    const settings = this.#settings(record);
    const now = Date.now();
    const last = this.#lastAsked.get(record.id);
    if (last !== undefined && now - last < settings.statusPollIntervalMs) return Promise.resolve('pending');
    this.#lastAsked.set(record.id, now);
    const question = this.#ask(record, record.statusUrl, settings).finally(() => this.#inFlight.delete(record.id));
    this.#inFlight.set(record.id, question);
    return question;
  }

  close(): void {
    for (const agent of [this.#agent, ...this.#tlsAgents.values()]) void agent.destroy().catch(() => {});
    this.#tlsAgents.clear();
    this.#lastAsked.clear();
  }

  async #ask(record: RequestRecord, url: string, settings: ReconcileSettings): Promise<RequestStatus> {
    const answer = await this.#upstreamStatus(record, url, settings);
    if (answer === undefined || answer === 'pending') return 'pending';
    const outcome = await this.#options.tracker.transition(record.id, answer, 'upstream');
    switch (outcome) {
      case 'applied':
      case 'already_applied':
        return answer;
      case 'conflict':
        // Recorded otherwise already (the internal API was first): that stands.
        return other(answer);
      case 'not_found':
        // Expired between the client's read and now: what the client read stands.
        return record.status;
    }
  }

  /** The upstream's answer, or undefined when it has none to give (logged). Never rejects. */
  async #upstreamStatus(record: RequestRecord, url: string, settings: ReconcileSettings): Promise<RequestStatus | undefined> {
    const where = { requestId: record.id, route: record.route, statusUrl: url };
    const timeoutMs = settings.statusTimeoutMs;
    try {
      const response = await request(url, {
        method: 'GET',
        headers: { accept: 'application/json' },
        dispatcher: url.startsWith('https:') ? this.#agentFor(settings.tls) : this.#agent,
        // One deadline for connect, head and body alike.
        signal: AbortSignal.timeout(timeoutMs),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      const text = await readBounded(response.body, MAX_ANSWER_BYTES);
      if (response.statusCode < 200 || response.statusCode > 299) {
        this.#logger.info({ ...where, statusCode: response.statusCode }, 'upstream status URL did not answer 2xx; the request stays pending');
        return undefined;
      }
      const status = text === undefined ? undefined : statusOf(text);
      if (status === undefined) {
        this.#logger.warn(
          { ...where, statusCode: response.statusCode },
          'upstream status URL answered no {"status": "pending" | "completed" | "failed"}; the request stays pending',
        );
      }
      return status;
    } catch (error) {
      this.#logger.warn(
        { ...where, error: (error as Error).message, code: (error as NodeJS.ErrnoException).code },
        'upstream status URL unavailable; the request stays pending',
      );
      return undefined;
    }
  }

  /** The pool that speaks the route's TLS (the system's CAs when it has none). */
  #agentFor(tls: UpstreamTls | undefined): Agent {
    if (tls === undefined) return this.#agent;
    let agent = this.#tlsAgents.get(tls.poolKey);
    if (agent === undefined) this.#tlsAgents.set(tls.poolKey, (agent = new Agent({ ...AGENT_OPTIONS, connect: { ...tls.connect } })));
    return agent;
  }

  #settings(record: RequestRecord): ReconcileSettings {
    return this.#options.routeSettings(record.route) ?? this.#options.defaults;
  }
}

/** The current settings of the route named `name` (reloads included), with its upstream TLS; undefined when it has none. */
export function reconcileSettings(routes: ProxyRoutes, name: string): ReconcileSettings | undefined {
  const route = routes.table.routes.find((candidate) => candidate.name === name);
  if (route?.config.async === undefined) return undefined;
  return { ...route.config.async, tls: routes.pool(route).tls };
}

function other(status: TerminalStatus): TerminalStatus {
  return status === 'completed' ? 'failed' : 'completed';
}

function statusOf(text: string): RequestStatus | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    const status = parsed !== null && typeof parsed === 'object' ? (parsed as { status?: unknown }).status : undefined;
    return typeof status === 'string' && STATUSES.has(status) ? (status as RequestStatus) : undefined;
  } catch {
    return undefined;
  }
}

/** The body as text, or undefined (and the rest discarded) when it is longer than `maxBytes`. */
async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}
