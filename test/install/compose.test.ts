// docker-compose.yml, checked without a container engine: the services and
// their health checks, a persistent Redis, the admin port never published to
// the world, a users file on a writable volume (`users add` writes it), and
// the mounted config valid for Gatehouse.
import { existsSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';

interface Service {
  build?: string;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync('docker-compose.yml', 'utf8')) as { services: Record<string, Service>; volumes: Record<string, unknown> };
const { gatehouse, redis, backend } = compose.services;

/** `source:target[:mode]` of a service's volumes. */
function mounts(service: Service | undefined) {
  return (service?.volumes ?? []).map((spec) => {
    const [source, target, mode] = spec.split(':');
    return { source: source!, target: target!, readOnly: mode === 'ro' };
  });
}

describe('docker-compose.yml', () => {
  it('runs Gatehouse from this Dockerfile beside Redis and the demo backend, each checked for health', () => {
    expect(gatehouse?.build).toBe('.');
    expect(gatehouse?.healthcheck?.test.join(' ')).toContain('http://127.0.0.1:9090/readyz');
    expect(redis?.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
    expect(gatehouse?.depends_on?.redis?.condition).toBe('service_healthy');
    expect(gatehouse?.environment?.REDIS_URL).toBe('redis://redis:6379');
    expect(backend?.command).toEqual(['node', '/srv/echo-backend.mjs']);
  });

  it('keeps Redis persistent: an append-only file on a named volume', () => {
    expect(redis?.command).toEqual(expect.arrayContaining(['--appendonly', 'yes']));
    expect(mounts(redis)).toContainEqual({ source: 'redis-data', target: '/data', readOnly: false });
    expect(compose.volumes).toHaveProperty('redis-data');
  });

  it('publishes the public port and the admin port on the host loopback only', () => {
    expect(gatehouse?.ports).toContain('8080:8080');
    const admin = (gatehouse?.ports ?? []).filter((p) => p.endsWith(':9090'));
    expect(admin).toEqual(['127.0.0.1:9090:9090']);
  });

  it('mounts an existing, valid config read-only and keeps users and keys on a writable volume', () => {
    const config = mounts(gatehouse).find((m) => m.target === '/etc/gatehouse/gatehouse.yaml');
    expect(config?.readOnly).toBe(true);
    expect(existsSync(config!.source)).toBe(true);
    for (const file of mounts(backend).map((m) => m.source)) expect(existsSync(file)).toBe(true);

    const parsed = parseConfig(parse(readFileSync(config!.source, 'utf8')), { baseDir: '/etc/gatehouse', env: gatehouse?.environment ?? {} });
    expect(parsed.store.url).toBe('redis://redis:6379');
    const data = mounts(gatehouse).find((m) => m.target === '/var/lib/gatehouse');
    expect(data).toEqual({ source: 'gatehouse-data', target: '/var/lib/gatehouse', readOnly: false });
    // Everything the gateway or `users add` writes is on that volume.
    for (const written of [parsed.identity.provider === 'local' ? parsed.identity.usersFile : '', parsed.tokens.keysFile ?? '', parsed.requests.journalDir]) {
      expect(written.startsWith('/var/lib/gatehouse/')).toBe(true);
    }
    expect(parsed.routes.map((r) => r.upstreams)).toEqual([['http://backend:3000']]);
  });
});
