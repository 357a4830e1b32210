// Attack 4 of the abuse issue: one client opening connections that trickle
// login bodies until the gateway has no file descriptors left. The public
// listener caps connections per client address (and in total), and the admin
// listener has a cap of its own, so both keep answering everyone else.
import { Agent } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const PER_ADDRESS = 4;
const TOTAL = 12;
const ATTACKER = '127.0.0.1';

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({
    config: {
      server: { maxConnectionsPerAddress: PER_ADDRESS, maxConnections: TOTAL },
      routes: [{ name: 'public', prefix: '/public', upstreams: [upstream.url], auth: 'none' }],
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

/** A connection that starts a login and sends one byte of its body: it would hold its descriptor for as long as it trickles. */
async function trickler(url: string, localAddress: string): Promise<{ socket: Socket; closed: Promise<unknown> }> {
  const { hostname, port } = new URL(url);
  const socket = connect({ host: hostname, port: Number(port), localAddress });
  // A reset is how the gateway may close it: not an error here.
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write('POST /api/v1/auth/login HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{');
  return { socket, closed };
}

/** Resolves once `count` of the connections have been closed. */
function closedCount(connections: Array<{ closed: Promise<unknown> }>, count: number): Promise<void> {
  return new Promise((resolve) => {
    let closed = 0;
    for (const c of connections) {
      void c.closed.then(() => {
        closed += 1;
        if (closed === count) resolve();
      });
    }
  });
}

/** Closes the connections and waits until the gateway has let go of every one. */
async function closeAll(connections: Array<{ socket: Socket; closed: Promise<unknown> }>): Promise<void> {
  for (const c of connections) c.socket.destroy();
  await Promise.all(connections.map((c) => c.closed));
  const server = gw.gateway.app.server;
  const open = () => new Promise<number>((resolve, reject) => server.getConnections((error, n) => (error ? reject(error) : resolve(n))));
  while ((await open()) > 0) await new Promise((resolve) => setImmediate(resolve));
}

function isOpen(socket: Socket): boolean {
  return !socket.destroyed && socket.readyState === 'open';
}

describe('attack 4: connection flood', () => {
  it('closes the connections past the per-address cap; both listeners still answer a normal request', async () => {
    const flood = await Promise.all(Array.from({ length: PER_ADDRESS + 6 }, () => trickler(gw.url, ATTACKER)));
    try {
      // Six of them are closed by the gateway at once, without an answer.
      await closedCount(flood, 6);
      expect(flood.filter((c) => isOpen(c.socket))).toHaveLength(PER_ADDRESS);

      // Another client is served as usual, by the public listener and by the admin one.
      const agent = new Agent({ localAddress: '127.0.0.2' });
      try {
        const proxied = await send(`${gw.url}/public/hello`, { agent });
        expect(proxied.status).toBe(200);
      } finally {
        agent.destroy();
      }
      const health = await send(`${gw.adminUrl}/healthz`);
      expect(health.status).toBe(200);
      await gw.logs.next((line) => line.event === 'connection_refused' && line.cap === 'server.maxConnectionsPerAddress');
      const metrics = (await send(`${gw.adminUrl}/metrics`)).body.toString('utf8');
      expect(metrics).toContain('gatehouse_connections_refused_total{cap="connections_per_address"} 6');
    } finally {
      await closeAll(flood);
    }
  });

  it('keeps the admin listener answering when the public one is at its total cap', async () => {
    // Three addresses at their per-address cap fill the total cap of twelve.
    const addresses = ['127.0.0.3', '127.0.0.4', '127.0.0.5'];
    const flood = await Promise.all(addresses.flatMap((address) => Array.from({ length: PER_ADDRESS }, () => trickler(gw.url, address))));
    try {
      // One more from yet another address is over the total: Node drops it.
      const extra = await trickler(gw.url, '127.0.0.6');
      await extra.closed;
      expect(flood.filter((c) => isOpen(c.socket))).toHaveLength(TOTAL);
      const health = await send(`${gw.adminUrl}/healthz`);
      expect(health.status).toBe(200);
      const metrics = (await send(`${gw.adminUrl}/metrics`)).body.toString('utf8');
      expect(metrics).toContain('gatehouse_connections_refused_total{cap="connections"} 1');
    } finally {
      await closeAll(flood);
    }
  });
});
