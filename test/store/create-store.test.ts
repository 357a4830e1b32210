import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { GatehouseError } from '../../src/core/errors.js';
import { createStore } from '../../src/store/create-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { logSink } from '../helpers/log-sink.js';
import { startRedisServer, uniquePrefix } from '../helpers/redis-server.js';
import { sessionRecord } from './store-contract.js';

describe('createStore', () => {
  it('without a URL gives the memory store and warns that it is neither durable nor shared', async () => {
    const log = logSink();
    const store = await createStore({ keyPrefix: 'gatehouse:' }, log.logger);
    try {
      expect(store).toBeInstanceOf(MemoryStore);
      expect(store.kind).toBe('memory');
      const warnings = log.entries().filter((line) => line.level === 40);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]?.msg).toMatch(/sessions and request statuses are neither durable .*nor shared between instances/);
    } finally {
      await store.close();
    }
  });

  it('starts even when Redis is down, logs that without the password, and answers 503 until it is back', async () => {
    const server = await startRedisServer();
    try {
      await server.stop();
      const log = logSink();
      const url = server.url.replace('//', '//:top-secret@');
      const prefix = uniquePrefix();
      // Resolves although Redis never answers: the start-up probe gave up (and said so).
      const store = await createStore({ url, keyPrefix: prefix }, log.logger);
      try {
        expect(store.kind).toBe('redis');
        expect(log.entries().some((line) => line.level === 40 && /does not answer yet/.test(String(line.msg)))).toBe(true);
        const failure = await store.ping().catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(GatehouseError);
        expect(failure).toMatchObject({ code: 'store_unavailable' });
        expect(log.text()).toContain(`redis://:***@127.0.0.1:${server.port}`);
        expect(log.text()).not.toContain('top-secret');

        await server.start();
        await expect
          .poll(
            () =>
              store.ping().then(
                () => 'up',
                () => 'down',
              ),
            { timeout: 10_000, interval: 100 },
          )
          .toBe('up');

        // Redis was not there at start: the revocation subscription too must come up on its own.
        const heard = new Set<string>();
        store.onSessionRevoked((sid) => heard.add(sid));
        const peer = await createStore({ url, keyPrefix: prefix }, pino({ level: 'silent' }));
        try {
          const revoked: string[] = [];
          await expect
            .poll(
              async () => {
                const session = sessionRecord();
                await peer.createSession(session);
                await peer.revokeSession(session.sid);
                revoked.push(session.sid);
                return revoked.some((sid) => heard.has(sid));
              },
              { timeout: 10_000, interval: 100 },
            )
            .toBe(true);
        } finally {
          await peer.close();
        }
      } finally {
        await store.close();
      }
    } finally {
      await server.close();
    }
  });
});
