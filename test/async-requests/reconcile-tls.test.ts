// An https:// status URL (routes[].async.statusUrlTemplate) is asked with the
// route's own TLS to its upstreams, as the proxied requests are: a backend
// whose certificate a private CA signs answers the status question when the
// route names that CA, and stays unasked-for (pending, logged) with the
// system's CAs alone. Never in the clear instead.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileUpstreamTls } from '../../src/proxy/upstream-tls.js';
import type { RequestTracker } from '../../src/async-requests/request-tracker.js';
import { UpstreamReconciler, type ReconcileSettings } from '../../src/async-requests/upstream-reconciler.js';
import type { RequestRecord, TerminalStatus } from '../../src/store/store.js';
import { createTestAuthority, type TestAuthority } from '../helpers/certificates.js';
import { logSink } from '../helpers/log-sink.js';

let authority: TestAuthority;
let server: Server;
let origin: string;

beforeAll(async () => {
  authority = createTestAuthority();
  const { cert, key } = authority.issue('status-service');
  server = createServer({ cert, key }, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ status: 'completed' }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server?.close();
  authority?.remove();
});

/** A reconciler whose route has `tls`, and the transitions it records. */
function reconcilerWith(tls: ReconcileSettings['tls']) {
  const recorded: Array<[string, TerminalStatus]> = [];
  const tracker = {
    transition: async (id: string, status: TerminalStatus) => {
      recorded.push([id, status]);
      return 'applied' as const;
    },
  } as unknown as RequestTracker;
  const logs = logSink('info');
  const settings: ReconcileSettings = { statusPollIntervalMs: 1, statusTimeoutMs: 10_000, tls };
  const reconciler = new UpstreamReconciler({ tracker, logger: logs.logger, routeSettings: () => settings, defaults: settings });
  return { reconciler, recorded, logs };
}

function pendingRecord(): RequestRecord {
  const id = randomUUID();
  const now = Date.now();
  return { id, status: 'pending', sub: 'alice', route: 'secure', upstream: origin, statusUrl: `${origin}/jobs/${id}`, createdAt: now, updatedAt: now };
}

describe('an https:// status URL', () => {
  it("is asked with the route's CA bundle, and its answer recorded", async () => {
    const { reconciler, recorded } = reconcilerWith(compileUpstreamTls({ caFile: authority.certFile }, undefined));
    const record = pendingRecord();
    try {
      expect(await reconciler.reconcile(record)).toBe('completed');
      expect(recorded).toEqual([[record.id, 'completed']]);
    } finally {
      reconciler.close();
    }
  });

  it('stays pending with the system CAs alone (the certificate does not verify), and says why', async () => {
    const { reconciler, recorded, logs } = reconcilerWith(undefined);
    try {
      expect(await reconciler.reconcile(pendingRecord())).toBe('pending');
      expect(recorded).toEqual([]);
      expect(logs.entries().some((entry) => entry.msg === 'upstream status URL unavailable; the request stays pending')).toBe(true);
    } finally {
      reconciler.close();
    }
  });
});
