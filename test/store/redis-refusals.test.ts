// A Redis that answers but refuses the gateway is named with its reply and
// what to change, not only as the EPIPEs and timeouts that follow from it.
// Protected mode lets in only clients from 127.0.0.1 and ::1, so the gateway
// reaches a real one through a relay on loopback whose outbound side comes
// from 127.0.0.2: every byte stays on this machine's loopback interface.
import { connect, createServer, type Server } from 'node:net';
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

/** A relay on 127.0.0.1 to `port`, connecting from 127.0.0.2: to protected mode, a client from outside. */
async function relayFromOtherLoopback(port: number): Promise<{ url: string; server: Server }> {
  const server = createServer((inbound) => {
    const outbound = connect({ host: '127.0.0.1', port, localAddress: '127.0.0.2' });
    inbound.pipe(outbound).pipe(inbound);
    const end = () => (inbound.destroy(), outbound.destroy());
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `redis://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

describe('a Redis that refuses the gateway with an error reply', () => {
  it('protected mode (-DENIED, sent as the connection opens): logged with that reply and what to change', { timeout: 20_000 }, async () => {
    const redis = await startRedisServer({ args: ['--protected-mode', 'yes'] });
    servers.push(redis);
    const { url, server: relay } = await relayFromOtherLoopback(redis.port);
    try {
      const { entry } = await refusalLogged(url);
      expect(String(entry.refusal)).toMatch(/^DENIED Redis is running in protected mode because .*\.$/);
      expect(String(entry.fix)).toContain('store.url');
      expect(String(entry.fix)).toContain('--protected-mode no');
      expect(String(entry.msg)).toContain('Redis refuses the connection: DENIED');
    } finally {
      relay.close();
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
