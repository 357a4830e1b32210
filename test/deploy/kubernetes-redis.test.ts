// The small overlay's Redis, run for real: a redis-server given the
// ConfigMap's redis.conf (its network and data folder replaced by a free
// local port and a temporary folder) and the password the Secret holds
// refuses to evict, keeps an append-only file, refuses a client without the
// password, and answers the gateway's REDIS_URL from the same Secret.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';
import { buildAll, type Manifest } from './kustomize-build.js';

/** What belongs to the pod (its address, its volume), not to how Redis keeps data. */
const POD_SETTINGS = new Set(['bind', 'port', 'dir']);

let server: RedisServerHandle;
let dataDir: string;
let secrets: Record<string, string>;

beforeAll(async () => {
  const builds = buildAll();
  try {
    const manifests = builds.manifests.get('small')!;
    const conf = manifests.find((m: Manifest) => m.kind === 'ConfigMap' && m.metadata.name === 'gatehouse-redis')!.data['redis.conf'] as string;
    secrets = builds.secrets.get('small')!;
    dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-k8s-redis-'));
    // Each line of redis.conf is also a command-line option (`--name value`): what the pod's Redis reads from the file.
    const settings = conf
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split(/\s+/))
      .filter(([name]) => !POD_SETTINGS.has(name!));
    server = await startRedisServer({
      args: [...settings.flatMap(([name, ...values]) => [`--${name}`, ...values]), '--dir', dataDir, '--requirepass', secrets.REDIS_PASSWORD!],
    });
  } finally {
    builds.remove();
  }
}, 60_000);

afterAll(async () => {
  await server?.close();
  if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
});

describe('deploy/kubernetes/overlays/small: its Redis', () => {
  it('answers the REDIS_URL the gateway is given, and runs noeviction with an append-only file', async () => {
    const url = new URL(secrets.REDIS_URL!);
    expect(url.hostname).toBe('gatehouse-redis');
    url.host = `127.0.0.1:${server.port}`;
    const redis = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 0 });
    try {
      await redis.connect();
      expect(await redis.ping()).toBe('PONG');
      expect(await redis.config('GET', 'maxmemory-policy')).toStrictEqual(['maxmemory-policy', 'noeviction']);
      expect(await redis.config('GET', 'appendonly')).toStrictEqual(['appendonly', 'yes']);
    } finally {
      redis.disconnect();
    }
  });

  it('refuses a client without the password', async () => {
    // No ready check: it would run INFO first and close on its NOAUTH.
    const redis = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0, enableReadyCheck: false });
    try {
      await redis.connect();
      await expect(redis.get('x')).rejects.toThrow(/NOAUTH/);
    } finally {
      redis.disconnect();
    }
  });
});
