import type { UpstreamTls } from './upstream-tls.js';

// The targets of one route: round-robin over the healthy ones. A target that
// refuses connections is skipped for `targetDownMs`, then tried again by the
// next request that reaches it (passive health checking, as Envoy's outlier
// detection does in its simplest form).
export class UpstreamTarget {
  readonly origin: string;
  readonly url: URL;
  /** Ready for node:http: IPv6 literals without brackets, the port as a number. */
  readonly hostname: string;
  readonly port: number;
  readonly protocol: 'http:' | 'https:';
  /** Epoch ms until which the target is skipped; 0 when healthy. */
  downUntil = 0;

  constructor(origin: string) {
    this.origin = origin;
    this.url = new URL(origin);
    this.hostname = this.url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.protocol = this.url.protocol === 'https:' ? 'https:' : 'http:';
    this.port = Number(this.url.port) || (this.protocol === 'https:' ? 443 : 80);
  }
}

/**
 * One target per distinct origin, shared by every route that names it and
 * kept across route reloads, so a reload does not forget which targets are
 * down. (Connections are the forwarding engine's: undici pools per origin.)
 */
export class TargetRegistry {
  readonly #targets = new Map<string, UpstreamTarget>();

  target(upstreamUrl: string): UpstreamTarget {
    const origin = new URL(upstreamUrl).origin;
    let target = this.#targets.get(origin);
    if (!target) {
      target = new UpstreamTarget(origin);
      this.#targets.set(origin, target);
    }
    return target;
  }

  /** Forgets the origins no route names any more. */
  retainOnly(origins: ReadonlySet<string>): void {
    for (const origin of this.#targets.keys()) {
      if (!origins.has(origin)) this.#targets.delete(origin);
    }
  }
}

export class UpstreamPool {
  readonly targets: readonly UpstreamTarget[];
  /** How its https:// targets are spoken to (CAs, SNI, client certificate, HTTP/2); undefined: undici's defaults. */
  readonly tls: UpstreamTls | undefined;
  /**
   * Upstream requests of this route in flight at once, at most: the targets'
   * connections are shared by every route that names them, and one route
   * (a public one above all) must not take them all. Infinity: no cap.
   */
  readonly maxInFlight: number;
  #inFlight = 0;
  readonly #downMs: number;
  #next = 0;

  constructor(targets: readonly UpstreamTarget[], downMs: number, maxInFlight = Infinity, tls?: UpstreamTls) {
    this.targets = targets;
    this.tls = tls;
    this.#downMs = downMs;
    this.maxInFlight = maxInFlight;
  }

  /** Takes one of the route's in-flight places; false when all are taken. Each true is followed by one `release`. */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.maxInFlight) return false;
    this.#inFlight += 1;
    return true;
  }

  release(): void {
    this.#inFlight -= 1;
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
