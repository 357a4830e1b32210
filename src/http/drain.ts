// Draining the public listener after a stop signal: readiness turns 503,
// every answer from then on says `Connection: close`, keep-alive connections
// are closed as soon as they are idle, and requests in flight finish. What
// is still running when the grace ends is cut, and counted.
import type { Server, ServerResponse } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';

/** How often connections that went idle during the drain are closed. */
const IDLE_SWEEP_MS = 100;

export class Drain {
  /**
   * Read on every response head: a plain boolean, so the hot path pays one
   * test for it. Set once, never cleared.
   */
  active = false;

  /** Call before a response head is written: while draining, the connection closes after this answer. */
  closeAfter(res: ServerResponse): void {
    if (this.active) res.shouldKeepAlive = false;
  }

  /**
   * Drains `server` while `closing` (the listener's own close, which waits
   * for every connection to end) runs; after `graceMs`, cuts the connections
   * still busy. Resolves with how many were cut.
   */
  async run(server: Server, closing: Promise<unknown>, graceMs: number): Promise<number> {
    this.active = true;
    // Node closes idle connections once, when the server closes; connections
    // whose answer was already on its way then go idle later, still keep-alive.
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
    const grace = new AbortController();
    try {
      const finished = await Promise.race([
        closing.then(
          () => true,
          () => true,
        ),
        delay(graceMs, false, { signal: grace.signal }).catch(() => true),
      ]);
      if (finished) return 0;
      server.closeIdleConnections();
      const cut = await new Promise<number>((resolve) => server.getConnections((error, count) => resolve(error ? 0 : count)));
      server.closeAllConnections();
      await closing.catch(() => undefined);
      return cut;
    } finally {
      grace.abort();
      clearInterval(sweep);
    }
  }
}
