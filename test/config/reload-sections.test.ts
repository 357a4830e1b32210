// Reloads keep their word, section by section, on a running gateway: what the
// log says was reloaded is in force at once (the gateway's CORS, route rules
// with the roles they may name), and an edit of a section that needs a
// restart is refused whole, naming that section, with nothing of it in force.
// The file is not polled here (the mock below): reloadRoutes(), what SIGHUP
// calls, applies each edit, so the tests wait on nothing.
import { writeFile } from 'node:fs/promises';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { configYaml, startFileGateway, type FileGateway } from '../helpers/config-file.js';
import { login } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

vi.mock('../../src/config-load/watch-config.js', () => ({ watchConfigFile: () => () => {} }));

const ORIGIN = 'https://app.example.com';
const RELOADED = 'config reloaded';

let upstream: Upstream;
let gw: FileGateway;

const orders = (extra: Record<string, unknown> = {}) => ({ name: 'orders', prefix: '/orders', upstreams: [upstream.url], ...extra });
const reports = () => ({ name: 'reports', prefix: '/reports', upstreams: [upstream.url] });

async function writeConfig(routes: unknown[], extra = ''): Promise<void> {
  await writeFile(gw.configFile, `${configYaml(routes)}\n${extra}`);
}

function preflight(path: string): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: 'OPTIONS',
    headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
  });
}

async function get(path: string, token: string): Promise<number> {
  const response = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  await response.arrayBuffer();
  return response.status;
}

const lines = (msg: string | RegExp) => gw.logs.entries().filter((entry) => (typeof msg === 'string' ? entry.msg === msg : msg.test(String(entry.msg))));

beforeAll(async () => {
  upstream = await startUpstream();
});
afterAll(async () => {
  await upstream.close();
});
beforeEach(async () => {
  gw = await startFileGateway([orders()]);
  return () => gw.close();
});

describe('live sections', () => {
  it('a cors section added to a running gateway answers the next preflight with CORS headers', async () => {
    const before = await preflight('/api/v1/auth/login');
    await before.arrayBuffer();
    expect(before.headers.get('access-control-allow-origin')).toBeNull();

    await writeConfig([orders()], `cors:\n  allowedOrigins: ["${ORIGIN}"]\n`);
    expect(await gw.gateway.reloadRoutes()).toBe(true);

    const after = await preflight('/api/v1/auth/login');
    await after.arrayBuffer();
    expect(after.status).toBe(204);
    expect(after.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(after.headers.get('access-control-allow-methods')).toContain('POST');
    expect(lines(RELOADED).at(-1)).toMatchObject({ level: 30, sections: ['cors'] });
    expect(lines(/^config change/)).toEqual([]);

    // Taken away again: the next preflight carries no permission.
    await writeConfig([orders()]);
    expect(await gw.gateway.reloadRoutes()).toBe(true);
    const removed = await preflight('/api/v1/auth/login');
    await removed.arrayBuffer();
    expect(removed.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('authorization rules added to a running gateway apply at once, and the log says they were reloaded, not that they wait', async () => {
    const { access_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    expect(await get('/orders/1', token)).toBe(200);

    await writeConfig([orders({ authorize: { anyRole: ['admin'] } })], 'authorization:\n  roles: [admin]\n');
    expect(await gw.gateway.reloadRoutes()).toBe(true);

    expect(await get('/orders/1', token)).toBe(403);
    expect(lines(RELOADED).at(-1)).toMatchObject({ level: 30, sections: ['routes', 'authorization'], routes: 1 });
    expect(lines(/^config change/)).toEqual([]);
  });
});

describe('restart-only sections', () => {
  it('an edit of one is refused whole: the log names the sections, and nothing of the edit is in force', async () => {
    const { access_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    const edited = configYaml([orders(), reports()]).replace('accessTokenTtlS: 60', 'accessTokenTtlS: 30').replace('level: info', 'level: warn');
    await writeFile(gw.configFile, edited);
    expect(await gw.gateway.reloadRoutes()).toBe(false);

    const [refusal, ...more] = lines(/^config change refused: /);
    expect(more).toEqual([]);
    expect(refusal).toMatchObject({ level: 40, sections: ['log', 'tokens'] });
    expect(refusal!.msg).toMatch(/^config change refused: log, tokens take effect only at a restart; nothing of this edit is in force/);
    // The route added in the same edit is not in force either, and nothing was said to be reloaded.
    expect(await get('/reports/1', token)).toBe(404);
    expect(await get('/orders/1', token)).toBe(200);
    expect(lines(RELOADED)).toEqual([]);

    // The restart-only edit undone, the rest of it reloads.
    await writeConfig([orders(), reports()]);
    expect(await gw.gateway.reloadRoutes()).toBe(true);
    expect(await get('/reports/1', token)).toBe(200);
    expect(lines(RELOADED).at(-1)).toMatchObject({ sections: ['routes'], routes: 2 });
  });

  it('a proxy setting other than targetDownMs needs a restart; targetDownMs reloads', async () => {
    await writeConfig([orders()], 'proxy:\n  targetDownMs: 1234\n');
    expect(await gw.gateway.reloadRoutes()).toBe(true);
    expect(lines(RELOADED).at(-1)).toMatchObject({ sections: ['proxy.targetDownMs'] });

    await writeConfig([orders()], 'proxy:\n  targetDownMs: 1234\n  dnsCacheTtlS: 5\n');
    expect(await gw.gateway.reloadRoutes()).toBe(false);
    expect(lines(/^config change refused: /).at(-1)).toMatchObject({ sections: ['proxy'] });
  });
});
