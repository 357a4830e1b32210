// Gateway instances on one real Redis, each in a directory of its own (its
// own keys file and copy of the users file, as a pod or host has), their
// secrets given through the environment as an operator gives them, and the
// traffic of a deployment running against them: logins, proxied calls with
// tokens issued by other instances, 202s whose outcome backends report to the
// internal API with the service token they hold. Every answer that is not
// the expected one is a failure, named with the instance and the step.
import { randomUUID } from 'node:crypto';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { parseConfig } from '../../src/config-load/load.js';
import type { SharedKeySet } from '../../src/tokens/shared-keyset.js';
import { postJson } from '../helpers/gateway.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

export interface Instance {
  name: string;
  dir: string;
  gateway: Gateway;
  url: string;
  adminUrl: string;
  logs: LogSink;
}

export const PASSWORD = 'alice-password-1';

/** Sections merged over an instance's config. */
export interface Settings {
  server?: Record<string, unknown>;
  admin?: Record<string, unknown>;
  identity?: Record<string, unknown>;
}

/** `/orders/…` answers 200; `POST /jobs` answers 202 with a fresh request id (the gateway records it). */
export function startBackend(): Promise<Upstream> {
  return startUpstream((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      const accepted = req.method === 'POST' && req.url === '/jobs';
      res.writeHead(accepted ? 202 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(accepted ? { requestId: randomUUID() } : { ok: true }));
    });
  });
}

export class Fleet {
  readonly #redisUrl: string;
  readonly #keyPrefix: string;
  readonly #usersFile: string;
  readonly #backend: Upstream;
  #generation = 0;

  constructor(options: { redisUrl: string; keyPrefix: string; usersFile: string; backend: Upstream }) {
    this.#redisUrl = options.redisUrl;
    this.#keyPrefix = options.keyPrefix;
    this.#usersFile = options.usersFile;
    this.#backend = options.backend;
  }

  /** A new instance (a new pod: new directory, new key) with these secrets in its environment. */
  async start(env: Record<string, string>, settings: Settings = {}): Promise<Instance> {
    const prepared = await this.prepare(env, settings);
    const { url, adminUrl } = await prepared.gateway.listen();
    return { ...prepared, url, adminUrl: adminUrl! };
  }

  /** The gateway made, not listening yet: a test that sees its start fail. */
  async prepare(env: Record<string, string>, settings: Settings = {}): Promise<Omit<Instance, 'url' | 'adminUrl'>> {
    this.#generation += 1;
    const name = `gw${this.#generation}`;
    const dir = await mkdtemp(join(tmpdir(), `gatehouse-fleet-${name}-`));
    await copyFile(this.#usersFile, join(dir, 'users.yaml'));
    const config = parseConfig(
      {
        server: { host: '127.0.0.1', port: 0, ...settings.server },
        admin: { host: '127.0.0.1', port: 0, ...settings.admin },
        log: { level: 'info' },
        store: { url: this.#redisUrl, keyPrefix: this.#keyPrefix },
        identity: { provider: 'local', usersFile: './users.yaml', ...settings.identity },
        tokens: { issuer: 'https://gatehouse.fleet.test', keysFile: './keys.json' },
        // Load shedding reads this machine's event loop, which other work makes late at random (as test/helpers/gateway.ts says).
        limits: { loadShedding: { enabled: false } },
        routes: [
          { name: 'orders', prefix: '/orders', upstreams: [this.#backend.url] },
          { name: 'jobs', prefix: '/jobs', upstreams: [this.#backend.url] },
        ],
      },
      { baseDir: dir, env },
    );
    const logs = logSink('info');
    const gateway = await createGateway(config, { logger: logs.logger });
    return { name, dir, gateway, logs };
  }

  async stop(instance: Pick<Instance, 'gateway' | 'dir'>): Promise<void> {
    await instance.gateway.close();
    await rm(instance.dir, { recursive: true, force: true });
  }
}

export function sharedKeysOf(instance: Instance): SharedKeySet {
  return instance.gateway.keys as SharedKeySet;
}

/** Every instance publishes, reads and compares twice: each view compared is then current. */
export async function heartbeats(instances: readonly Instance[]): Promise<void> {
  for (let round = 0; round < 2; round += 1) for (const instance of instances) await sharedKeysOf(instance).heartbeatNow();
}

export async function readiness(instance: Instance): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${instance.adminUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * The load balancer and the clients behind it, and the backends that report
 * outcomes: round robin over the instances in rotation, each backend with
 * the service token it holds now (they move to a new one one at a time).
 */
export class Traffic {
  rotation: Instance[];
  /** The service token each backend presents. */
  readonly backendTokens: string[];
  readonly failures: string[] = [];
  readonly sent = { logins: 0, calls: 0, jobs: 0, reports: 0 };
  #next = 0;
  readonly #inFlight = new Map<Instance, { count: number; idle: Array<() => void> }>();

  constructor(instances: Instance[], backendTokens: string[]) {
    this.rotation = [...instances];
    this.backendTokens = backendTokens;
  }

  get total(): number {
    return this.sent.logins + this.sent.calls + this.sent.jobs + this.sent.reports;
  }

  /** `workers` loops until `until` settles: log in at one instance, call through the next ones with that token, report each 202's outcome at yet another. */
  async run(until: Promise<unknown>, workers = 3): Promise<void> {
    let done = false;
    void until.finally(() => (done = true));
    await Promise.all(
      Array.from({ length: workers }, async (_, worker) => {
        let token: string | undefined;
        for (let i = 0; !done; i += 1) {
          if (token === undefined || i % 8 === 0) token = (await this.login()) ?? token;
          else if (i % 3 === 0) await this.job(token, this.backendTokens[(worker + i) % this.backendTokens.length]!);
          else await this.call(token);
        }
      }),
    );
  }

  /** Every kind of request once more, each backend's token included: a step of a rotation is never left untried. */
  async exercise(): Promise<void> {
    const token = await this.login();
    if (token === undefined) return;
    for (let i = 0; i < this.rotation.length; i += 1) await this.call(token);
    for (const serviceToken of this.backendTokens) await this.job(token, serviceToken);
  }

  async login(): Promise<string | undefined> {
    this.sent.logins += 1;
    return this.#send('login', async (instance) => {
      const response = await postJson(`${instance.url}/api/v1/auth/login`, { username: 'alice', password: PASSWORD });
      if (response.status !== 200) return `${response.status} ${(await response.text()).slice(0, 160)}`;
      return { value: ((await response.json()) as { access_token: string }).access_token };
    });
  }

  /** A proxied call with `token` (usually issued by another instance). */
  async call(token: string): Promise<void> {
    this.sent.calls += 1;
    await this.#send('call', async (instance) => {
      const response = await fetch(`${instance.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } });
      const body = await response.text();
      return response.status === 200 ? { value: undefined } : `${response.status} ${body.slice(0, 160)}`;
    });
  }

  /** A 202 through one instance, its outcome reported by a backend with `serviceToken` to another. */
  async job(token: string, serviceToken: string): Promise<void> {
    this.sent.jobs += 1;
    const id = await this.#send('job', async (instance) => {
      const response = await fetch(`${instance.url}/jobs`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      const body = await response.text();
      return response.status === 202 ? { value: (JSON.parse(body) as { requestId: string }).requestId } : `${response.status} ${body.slice(0, 160)}`;
    });
    if (id === undefined) return;
    this.sent.reports += 1;
    await this.#send('report', async (instance) => {
      const response = await fetch(`${instance.adminUrl}/internal/v1/requests/${id}/status`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${serviceToken}` },
        body: '{"status":"completed"}',
      });
      return response.status === 200 ? { value: undefined } : `${response.status} ${(await response.text()).slice(0, 160)}`;
    });
  }

  /** Out of the rotation, then resolves once what was sent to it is answered (the endpoints update and preStop wait of a pod). */
  async remove(instance: Instance): Promise<void> {
    this.rotation = this.rotation.filter((other) => other !== instance);
    const flight = this.#flight(instance);
    if (flight.count > 0) await new Promise<void>((resolve) => flight.idle.push(resolve));
  }

  async #send<T>(step: string, attempt: (instance: Instance) => Promise<{ value: T } | string>): Promise<T | undefined> {
    const instance = this.rotation[this.#next++ % this.rotation.length]!;
    const flight = this.#flight(instance);
    flight.count += 1;
    try {
      const outcome = await attempt(instance);
      if (typeof outcome !== 'string') return outcome.value;
      this.failures.push(`${step} at ${instance.name}: ${outcome}`);
    } catch (error) {
      this.failures.push(`${step} at ${instance.name}: ${(error as Error).message}`);
    } finally {
      flight.count -= 1;
      if (flight.count === 0) for (const idle of flight.idle.splice(0)) idle();
    }
    return undefined;
  }

  #flight(instance: Instance): { count: number; idle: Array<() => void> } {
    let flight = this.#inFlight.get(instance);
    if (!flight) this.#inFlight.set(instance, (flight = { count: 0, idle: [] }));
    return flight;
  }
}

/** Replaces each instance in rotation in turn by one started with `env`, the traffic running; resolves with the new ones. */
export async function rollingRestart(fleet: Fleet, traffic: Traffic, env: Record<string, string>): Promise<Instance[]> {
  const count = traffic.rotation.length;
  for (let i = 0; i < count; i += 1) {
    const old = traffic.rotation[0]!;
    await traffic.remove(old);
    await fleet.stop(old);
    const fresh = await fleet.start(env);
    const ready = await readiness(fresh);
    if (ready.status !== 200) traffic.failures.push(`${fresh.name} not ready: ${JSON.stringify(ready.body)}`);
    traffic.rotation = [...traffic.rotation, fresh];
    // Requests reach the new instance, with tokens of the others, before the next one restarts.
    await traffic.exercise();
  }
  return traffic.rotation;
}
