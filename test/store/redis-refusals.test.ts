// A Redis that answers but refuses the gateway is named with its reply and
// what to change, not only as the EPIPEs and timeouts that follow from it.
// Protected mode refuses only clients outside the loopback interface, so the
// gateway reaches it through this machine's own non-loopback address.
import { networkInterfaces } from 'node:os';
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import type { Store } from '../../src/store/store.js';
import { logSink, type LogEntry } from '../helpers/log-sink.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';

const servers: RedisServerHandle[] = [];
const stores: Store[] = [];

afterAll(async () => {
  await Promise.all(stores.map((store) => store.close()));
  await Promise.all(servers.map((server) => server.close()));
});

/** Opens a store on `url` and resolves with the first warning that names a refusal. */
async function refusalLogged(url: string): Promise<{ entry: LogEntry; text: string }> {
  const log = logSink('debug');
  const store = await createStore({ url, keyPrefix: uniquePrefix() }, log.logger);
  stores.push(store);
  const entry = await log.next((line) => line.level === 40 && typeof line.refusal === 'string');
  return { entry, text: log.text() };
}

/** This machine's first IPv4 address outside loopback, if it has one. */
function nonLoopbackAddress(): string | undefined {
  return Object.values(networkInterfaces())
    .flat()
    .find((address) => address !== undefined && address.family === 'IPv4' && !address.internal)?.address;
}

/** What protected mode does, where no address outside loopback exists to reach a real one through: greet with DENIED, then close. */
async function deniedGreeter(): Promise<{ url: string; server: Server }> {
  const server = createServer((socket) =>
    socket.end('-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user.\r\n'),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `redis://127.0.0.1:${port}`, server };
}

describe('a Redis that refuses the gateway with an error reply', () => {
  it('protected mode (-DENIED, sent as the connection opens): logged with that reply and what to change', { timeout: 20_000 }, async () => {
    const address = nonLoopbackAddress();
    let url: string;
    let greeter: Server | undefined;
    if (address) {
      // Listening on loopback too: the test's own readiness probe comes from there, which protected mode lets in.
      const redis = await startRedisServer({ args: ['--bind', '127.0.0.1', address, '--protected-mode', 'yes'] });
      servers.push(redis);
      url = `redis://${address}:${redis.port}`;
    } else {
      ({ url, server: greeter } = await deniedGreeter());
    }
    try {
      const { entry } = await refusalLogged(url);
      expect(String(entry.refusal)).toMatch(/^DENIED Redis is running in protected mode because .*\.$/);
      expect(String(entry.fix)).toContain('store.url');
      expect(String(entry.fix)).toContain('--protected-mode no');
      expect(String(entry.msg)).toContain('Redis refuses the connection: DENIED');
    } finally {
      greeter?.close();
    }
  });

  it('NOAUTH: a password is required and store.url has none', { timeout: 20_000 }, async () => {
    const redis = await startRedisServer({ args: ['--requirepass', 'the-right-one'] });
    servers.push(redis);
    const { entry } = await refusalLogged(redis.url);
    expect(entry.refusal).toBe('NOAUTH Authentication required.');
    expect(String(entry.fix)).toContain('put it in store.url');
  });

  it("WRONGPASS: store.url's password is wrong, and is never written", { timeout: 20_000 }, async () => {
    const redis = await startRedisServer({ args: ['--requirepass', 'the-right-one'] });
    servers.push(redis);
    const secret = 'wrong-secret-5d1e';
    const { entry, text } = await refusalLogged(redis.url.replace('//', `//:${secret}@`));
    expect(String(entry.refusal)).toMatch(/^WRONGPASS invalid username-password pair/);
    expect(String(entry.fix)).toContain('requirepass');
    expect(text).not.toContain(secret);
  });
});
