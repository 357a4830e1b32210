// A renewed certificate is put in force while requests keep coming, without a
// restart and without a failed request: the certificate file rewritten first
// (its key not yet: a mismatched pair, ignored, the old one serving), then the
// key; new connections get the new certificate, connections open go on. Which
// certificate served is read from each connection's peer certificate serial.
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { h2Request, h2Session } from '../helpers/h2-client.js';
import { makeTlsPair, type TlsPair } from '../helpers/tls-pair.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

/** How many clients keep sending while the files change. */
const CLIENTS = 4;

describe('certificate rotation under traffic', () => {
  let dir: string;
  let old: TlsPair;
  let renewed: TlsPair;
  let served: { certFile: string; keyFile: string };
  let up: Upstream;
  let gw: TestGateway;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-rotation-'));
    old = makeTlsPair(dir, 'old', 0x3001);
    renewed = makeTlsPair(dir, 'renewed', 0x3002);
    served = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    copyFileSync(old.certFile, served.certFile);
    copyFileSync(old.keyFile, served.keyFile);
    up = await startUpstream();
    gw = await startTestGateway({
      config: {
        server: { tls: { ...served, watchIntervalMs: 20 } },
        routes: [{ name: 'open', prefix: '/open', upstreams: [up.url], auth: 'none' }],
      },
    });
  });
  afterAll(async () => {
    await gw?.close();
    await up?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One GET on a connection of its own (no agent): the serial of the certificate it was served with. */
  function freshRequest(): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(`${gw.url}/open/ping`, { agent: false, ca: [old.cert, renewed.cert], servername: 'localhost' }, (res) => {
        const serial = (res.socket as TLSSocket).getPeerCertificate().serialNumber;
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(serial) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('puts the renewed pair in force once whole, with no request failing on the way', async () => {
    // A connection opened before: it keeps its certificate, and keeps working.
    const before = await h2Session(gw.url, Buffer.concat([old.cert, renewed.cert]));
    let stop = false;
    const failures: unknown[] = [];
    const serials = new Set<string>();
    let done = 0;
    const client = async () => {
      while (!stop) {
        try {
          serials.add(await freshRequest());
          done += 1;
        } catch (error) {
          failures.push(error);
        }
      }
    };
    const clients = Array.from({ length: CLIENTS }, client);
    expect(await freshRequest()).toBe(old.serialNumber);

    // Half a renewal: the new certificate beside the old key. Logged, ignored.
    const refusedAt = gw.logs.entries().length;
    copyFileSync(renewed.certFile, served.certFile);
    const refused = await gw.logs.next((entry) => entry.event === 'tls_reload_refused', refusedAt);
    expect(String(refused.reason)).toContain('is not the private key of the first certificate');
    expect(await freshRequest()).toBe(old.serialNumber);

    // The key follows: the pair is whole, and in force for the next connection.
    const reloadedAt = gw.logs.entries().length;
    copyFileSync(renewed.keyFile, served.keyFile);
    const reloaded = await gw.logs.next((entry) => entry.event === 'tls_reloaded', reloadedAt);
    expect(reloaded.serialNumber).toBe(renewed.serialNumber);
    expect(await freshRequest()).toBe(renewed.serialNumber);

    stop = true;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    expect(done).toBeGreaterThan(0);
    expect(serials).toEqual(new Set([old.serialNumber, renewed.serialNumber]));
    const answer = await h2Request(before, { ':method': 'GET', ':path': '/open/still-here' });
    expect(answer.status).toBe(200);
    before.destroy();
  });
});
