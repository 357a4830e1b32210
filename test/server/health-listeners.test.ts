// Health without the internal API (`server.health.on`, server/health-listeners.ts):
// each choice answers /healthz and /readyz on the listener it names, the
// internal status API and /metrics are never reachable there, and on the
// public listener the two health paths are the gateway's only when chosen,
// exactly those two (a route keeps `/healthzone`), and no route may claim them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream?.close();
});

/** Every path the upstream would answer: what reaches it was the proxy's, not the gateway's. */
const catchAll = () => [{ name: 'everything', prefix: '/', auth: 'none', upstreams: [upstream.url] }];

const INTERNAL_STATUS = '/internal/v1/requests/0b7c4bb8-2f0e-4a43-9d8f-3a1c7e1f3f6a/status';

async function gatewayAnswer(base: string, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('server.health.on: admin (the default)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { routes: catchAll() } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('answers on the admin listener only: on the public one, /healthz and /readyz are a route like any other', async () => {
    expect(await gatewayAnswer(gw.adminUrl!, '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect(gw.healthUrl).toBeUndefined();
    for (const path of ['/healthz', '/readyz']) {
      const proxied = await gatewayAnswer(gw.url, path);
      expect(proxied.status).toBe(200);
      expect((proxied.body as unknown as EchoBody).url, path).toBe(path);
    }
  });
});

describe('server.health.on: public', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { server: { health: { on: 'public' } }, routes: catchAll() } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('answers /healthz and /readyz on the public listener (and still on the admin one), never proxying them', async () => {
    const before = upstream.seen.length;
    expect(await gatewayAnswer(gw.url, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await gatewayAnswer(gw.url, '/readyz?verbose=1')).toMatchObject({ status: 200, body: { status: 'ready', checks: { store: { status: 'ok' } } } });
    expect(await gatewayAnswer(gw.adminUrl!, '/readyz')).toMatchObject({ status: 200, body: { status: 'ready' } });
    expect(upstream.seen.length).toBe(before);
  });

  it('leaves /metrics, the internal status API and paths that only begin like a health path to the route', async () => {
    for (const path of ['/metrics', INTERNAL_STATUS, '/healthzone', '/readyz/more']) {
      const answer = await fetch(`${gw.url}${path}`, { method: path === INTERNAL_STATUS ? 'PUT' : 'GET' });
      expect(answer.status, path).toBe(200);
      expect(((await answer.json()) as EchoBody).url, path).toBe(path);
    }
  });

  it('refuses at start a route that claims a health path', () => {
    const problems = configProblems(() =>
      parseConfig(
        {
          server: { health: { on: 'public' } },
          identity: { provider: 'local', usersFile: '/nonexistent/users.yaml' },
          tokens: { keysFile: '/nonexistent/keys.json' },
          routes: [
            { name: 'probe', prefix: '/readyz', upstreams: [upstream.url] },
            { name: 'below', prefix: '/healthz/deep', upstreams: [upstream.url] },
            { name: 'near', prefix: '/healthzone', upstreams: [upstream.url] },
          ],
        },
        { baseDir: '/', env: {} },
      ),
    );
    expect(problems).toEqual([
      expect.stringMatching(/^routes\[0\]\.prefix: \/readyz is served by the gateway itself \(server\.health\.on: public\)/),
      expect.stringMatching(/^routes\[1\]\.prefix: \/healthz\/deep is served by the gateway itself/),
    ]);
  });
});

describe('server.health.on: own', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { server: { health: { on: 'own', host: '127.0.0.1', port: 0 } }, routes: catchAll() } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('answers /healthz and /readyz on a listener of its own', async () => {
    expect(gw.healthUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.healthUrl).not.toBe(gw.adminUrl);
    expect(await gatewayAnswer(gw.healthUrl!, '/healthz')).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await gatewayAnswer(gw.healthUrl!, '/readyz')).toMatchObject({ status: 200, body: { status: 'ready', checks: { listener: { status: 'ok' } } } });
  });

  it('serves neither /metrics nor the internal status API there', async () => {
    expect((await fetch(`${gw.adminUrl}/metrics`)).status).toBe(200);
    for (const [method, path] of [
      ['GET', '/metrics'],
      ['PUT', INTERNAL_STATUS],
    ] as const) {
      const answer = await fetch(`${gw.healthUrl}${path}`, { method, headers: { 'content-type': 'application/json' }, body: method === 'PUT' ? '{}' : null });
      expect(answer.status, path).toBe(404);
      expect(await answer.json()).toEqual({ $diagnoses: [expect.objectContaining({ $detail: expect.stringMatching(/^404/) })] });
    }
  });

  it('refuses at start a health port that is the public or admin listener’s', () => {
    const config = (health: Record<string, unknown>) => ({
      server: { port: 8080, health },
      admin: { port: 9090 },
      identity: { provider: 'local', usersFile: '/nonexistent/users.yaml' },
      tokens: { keysFile: '/nonexistent/keys.json' },
    });
    expect(configProblems(() => parseConfig(config({ on: 'own', port: 9090 }), { baseDir: '/', env: {} }))).toEqual([
      expect.stringMatching(/^server\.health\.port: must differ from admin\.port \(9090\)/),
    ]);
    expect(configProblems(() => parseConfig(config({ on: 'own', port: 8080 }), { baseDir: '/', env: {} }))).toEqual([
      expect.stringMatching(/^server\.health\.port: must differ from server\.port \(8080\)/),
    ]);
    expect(() => parseConfig(config({ on: 'admin', port: 8080 }), { baseDir: '/', env: {} })).not.toThrow();
  });
});
