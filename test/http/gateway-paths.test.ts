// The one list of the gateway's own paths (src/http/gateway-paths.ts) against
// what a running gateway registers and what the HTTP API reference names: a
// route added without its constant, a constant left behind by a removed
// route, or an endpoint the reference does not mention fails here.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PATHS, BACKCHANNEL_LOGOUT_PATH, GATEWAY_PATH_PREFIXES, GATEWAY_PATH_ROOTS, GATEWAY_PATHS, isGatewayPath } from '../../src/http/gateway-paths.js';
import { registeredRoutes } from '../../src/server/route-record.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const HTTP_API_REFERENCE = new URL('../../docs/reference/http-api.md', import.meta.url);

/** The distinct paths of a listener's routes (HEAD routes and methods folded). */
function urls(routes: ReadonlyArray<{ url: string }>): string[] {
  return [...new Set(routes.map((route) => route.url))].sort();
}

describe('the gateway paths', () => {
  let gw: TestGateway;

  // Local mode with the account page and passkeys: every endpoint the gateway has is registered.
  beforeAll(async () => {
    gw = await startTestGateway({ config: { account: { enabled: true, passkeys: { origin: 'http://localhost:8080' } } } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('lists every route the public listener registered, and registers every path it lists', () => {
    const registered = urls(registeredRoutes(gw.gateway.app));
    expect(registered.length).toBeGreaterThan(0);
    for (const url of registered) expect(isGatewayPath(url), `${url} is handed to the proxy`).toBe(true);
    // Back-channel logout is a fronted provider's (oidc mode; test/oidc/backchannel-logout.test.ts registers it).
    expect(registered).toEqual(GATEWAY_PATHS.filter((path) => path !== BACKCHANNEL_LOGOUT_PATH).sort());
    expect(isGatewayPath(BACKCHANNEL_LOGOUT_PATH)).toBe(true);
  });

  it('lists every route of the admin listener, none of them a public gateway path', () => {
    expect(urls(registeredRoutes(gw.gateway.admin!))).toEqual([...ADMIN_PATHS].sort());
    for (const path of ADMIN_PATHS) expect(isGatewayPath(path), path).toBe(false);
  });

  it('keeps no space for itself that holds none of its paths', () => {
    for (const prefix of GATEWAY_PATH_PREFIXES)
      expect(
        GATEWAY_PATHS.some((path) => path.startsWith(prefix)),
        prefix,
      ).toBe(true);
    for (const root of GATEWAY_PATH_ROOTS) expect(GATEWAY_PATHS, root).toContain(root);
  });

  it('sends the paths of a route to Fastify and their neighbours to the proxy', () => {
    expect(isGatewayPath('/api/v1/requests/0b7c4bb8-2f0e-4a43-9d8f-3a1c7e1f3f6a/status')).toBe(true);
    expect(isGatewayPath('/account/')).toBe(true);
    // With a query it is the same page (a step-up's address, /account?acr_values=…), never handed to the proxy.
    expect(isGatewayPath('/account?acr_values=urn%3Agatehouse%3Aacr%3Amfa')).toBe(true);
    expect(isGatewayPath('/accounts')).toBe(false);
    expect(isGatewayPath('/accounts?x=1')).toBe(false);
    expect(isGatewayPath('/api/v1/accounting')).toBe(false);
    expect(isGatewayPath('/api/v1/authx')).toBe(false);
  });

  it('are all named in the HTTP API reference', async () => {
    const reference = await readFile(HTTP_API_REFERENCE, 'utf8');
    const missing = [...GATEWAY_PATHS, ...ADMIN_PATHS].filter((path) => !named(reference, path));
    expect(missing, 'paths docs/reference/http-api.md does not name').toEqual([]);
  });
});

/** A path as the reference may write it: `{id}`, `<id>`, `:id` or `$ID` for a parameter. */
function named(text: string, path: string): boolean {
  // `/account/` is the page's own address with a slash: named with the page.
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  const pattern = trimmed
    .split('/')
    .map((segment) => {
      if (segment.startsWith(':')) return String.raw`(?:\{[^}/\s]+\}|<[^>/\s]+>|:\w+|\$\{?\w+\}?)`;
      // A catch-all (the status routes): the reference names what lies below it, or the space itself.
      if (segment === '*') return String.raw`[^\s\x60'"|)]*`;
      return segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('/');
  // Starts where a path may start (after a space, quote, bracket or a URL's host) and ends where a path ends.
  return new RegExp(String.raw`(?:^|[\s\x60'"(]|https?://[^/\s\x60'"]+)${pattern}(?=$|[\s\x60'"),.;:?#|])`, 'm').test(text);
}
