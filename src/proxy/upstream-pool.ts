// The targets of one route: round-robin over the healthy ones. A target that
// refuses connections is skipped for `targetDownMs`, then tried again by the
// next request that reaches it (passive health checking, as Envoy's outlier
// detection does in its simplest form).
import { Agent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';

/** How long a removed origin's connections may finish their requests after a route reload. */
export const RETIRED_AGENT_GRACE_MS = 60_000;

export class UpstreamTarget {
  readonly origin: string;
  readonly url: URL;
  /** Ready for node:http: IPv6 literals without brackets, the port as a number. */
  readonly hostname: string;
  readonly port: number;
  readonly protocol: 'http:' | 'https:';
  readonly agent: Agent;
  /** Epoch ms until which the target is skipped; 0 when healthy. */
  downUntil = 0;

  constructor(origin: string, agent: Agent) {
    this.origin = origin;
    this.url = new URL(origin);
    this.hostname = this.url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.protocol = this.url.protocol === 'https:' ? 'https:' : 'http:';
    this.port = Number(this.url.port) || (this.protocol === 'https:' ? 443 : 80);
    this.agent = agent;
  }
}

export interface TargetRegistryOptions {
  maxSocketsPerTarget: number;
}

/**
 * Keep-alive agents, one per distinct origin, shared by every route that
 * names it and kept across route reloads, so a reload does not drop warm
 * connections.
 */
export class TargetRegistry {
  readonly #targets = new Map<string, UpstreamTarget>();
  readonly #options: TargetRegistryOptions;

  constructor(options: TargetRegistryOptions) {
    this.#options = options;
  }

  target(upstreamUrl: string): UpstreamTarget {
    const origin = new URL(upstreamUrl).origin;
    let target = this.#targets.get(origin);
    if (!target) {
      const agentOptions = { keepAlive: true, maxSockets: this.#options.maxSocketsPerTarget, maxFreeSockets: 64, scheduling: 'lifo' as const };
      const agent = origin.startsWith('https:') ? new HttpsAgent(agentOptions) : new Agent(agentOptions);
      target = new UpstreamTarget(origin, agent);
      this.#targets.set(origin, target);
    }
    return target;
  }

  /**
   * Forgets the origins no route names any more. Their agents are destroyed
   * only after a grace period, so requests still in flight to them finish.
   */
  retainOnly(origins: ReadonlySet<string>, graceMs = RETIRED_AGENT_GRACE_MS): void {
    for (const [origin, target] of this.#targets) {
      if (origins.has(origin)) continue;
      this.#targets.delete(origin);
      if (graceMs === 0) target.agent.destroy();
      else setTimeout(() => target.agent.destroy(), graceMs).unref();
    }
  }

  close(): void {
    this.retainOnly(new Set(), 0);
  }
}

export class UpstreamPool {
  readonly targets: readonly UpstreamTarget[];
  readonly #downMs: number;
  #next = 0;

  constructor(targets: readonly UpstreamTarget[], downMs: number) {
    this.targets = targets;
    this.#downMs = downMs;
  }

  /**
   * The next healthy target in turn, skipping `exclude` (targets this request
   * already failed on). When every target is down, the one that has been down
   * longest is tried: refusing outright would turn a blip into an outage.
   */
  pick(now: number, exclude?: ReadonlySet<UpstreamTarget>): UpstreamTarget | undefined {
    const count = this.targets.length;
    let fallback: UpstreamTarget | undefined;
    for (let i = 0; i < count; i++) {
      const target = this.targets[(this.#next + i) % count]!;
      if (exclude?.has(target)) continue;
      if (target.downUntil <= now) {
        this.#next = (this.#next + i + 1) % count;
        return target;
      }
      if (!fallback || target.downUntil < fallback.downUntil) fallback = target;
    }
    return fallback;
  }

  markDown(target: UpstreamTarget, now: number): void {
    target.downUntil = now + this.#downMs;
  }

  markUp(target: UpstreamTarget): void {
    target.downUntil = 0;
  }
}
