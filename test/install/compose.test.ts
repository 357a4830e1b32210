// docker-compose.yml, checked without a container engine (npm run test:container
// runs it in one): the services and their health checks, a persistent Redis,
// the admin port never published to the world, a users file on a writable
// volume (`users add` writes it), the mounted config valid for Gatehouse, and
// the service token taken from the operator's environment, never a default.
import { randomBytes } from 'node:crypto';
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
  read_only?: boolean;
}

interface Compose {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
}

const VARIABLE = /\$\{(\w+)(?::-([^}]*)|:\?([^}]*))?\}/g;

/** The file as Compose reads it with `environment`: `${NAME}`, `${NAME:-default}`, `${NAME:?error}` replaced. */
function composeWith(environment: Record<string, string>): Compose {
  const text = readFileSync('docker-compose.yml', 'utf8').replace(VARIABLE, (_, name: string, fallback?: string, error?: string) => {
    const value = environment[name];
    if (value !== undefined && value !== '') return value;
    if (error !== undefined) throw new Error(`${name}: ${error}`);
    return fallback ?? '';
  });
  return parse(text) as Compose;
}

const serviceToken = randomBytes(32).toString('base64url');
const compose = composeWith({ GATEHOUSE_SERVICE_TOKEN: serviceToken });
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

  it('publishes the public port and the admin port on the host loopback only, on ports the operator may move', () => {
    expect(gatehouse?.ports).toContain('8080:8080');
    const admin = (gatehouse?.ports ?? []).filter((p) => p.endsWith(':9090'));
    expect(admin).toEqual(['127.0.0.1:9090:9090']);
    const moved = composeWith({ GATEHOUSE_SERVICE_TOKEN: serviceToken, GATEHOUSE_PORT: '18080', GATEHOUSE_ADMIN_PORT: '19090' });
    expect(moved.services.gatehouse?.ports).toEqual(['18080:8080', '127.0.0.1:19090:9090']);
  });

  it("gives the gateway and the backend the operator's service token, and will not start without one", () => {
    expect(gatehouse?.environment?.GATEHOUSE_SERVICE_TOKEN).toBe(serviceToken);
    // The backend reports outcomes on the internal status API with it, over the compose network.
    expect(backend?.environment?.GATEHOUSE_SERVICE_TOKEN).toBe(serviceToken);
    expect(backend?.environment?.GATEHOUSE_STATUS_URL).toBe('http://gatehouse:9090/internal/v1/requests');
    expect(() => composeWith({})).toThrow(/GATEHOUSE_SERVICE_TOKEN: set GATEHOUSE_SERVICE_TOKEN/);
  });

  it('runs the gateway on a read-only root filesystem', () => {
    expect(gatehouse?.read_only).toBe(true);
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
