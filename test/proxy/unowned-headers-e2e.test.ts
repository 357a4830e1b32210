// Attack 10 end to end: headers a backend believes but only infrastructure in
// front of it should set (the client's address as CDNs pass it, URL and
// method overrides) and `x-gatehouse-*` headers the gateway does not set.
// Sent by a client, on a protected route and on a public one, none may reach
// the backend, in any spelling, unless the operator allows it by name.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IdentityHeaderNames } from '../../src/config/schema.js';
import { compileClientAddress } from '../../src/http/client-address.js';
import { HeaderPolicy } from '../../src/proxy/upstream-headers.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let backend: Upstream;
let gw: TestGateway;
let allowing: TestGateway;
let auth: string;

beforeAll(async () => {
  backend = await startUpstream();
  const routes = [
    { prefix: '/api', upstreams: [backend.url] },
    { prefix: '/public', upstreams: [backend.url], auth: 'none' },
  ];
  [gw, allowing] = await Promise.all([
    startTestGateway({ config: { routes } }),
    startTestGateway({ config: { routes, proxy: { allowClientHeaders: ['True-Client-IP', 'x-http-method-override', 'X-Gatehouse-Tenant'] } } }),
  ]);
  auth = `authorization: Bearer ${(await login(gw.url, 'alice', 'alice-password-1')).access_token}`;
});
afterAll(async () => {
  await Promise.all([gw.close(), allowing.close()]);
  await backend.close();
});

/** What the backend received for one request through `gateway`. */
async function received(gateway: TestGateway, path: string, lines: string[]): Promise<EchoBody['headers']> {
  const response = await rawRequest(gateway.url, [`GET ${path} HTTP/1.1`, ...lines]);
  expect(response.status).toBe(200);
  return (JSON.parse(response.body) as EchoBody).headers;
}

const FORGED = '203.0.113.66';

describe('attack 10: client headers that a backend would trust', () => {
  it.each([
    ['X-Client-IP', `X-Client-IP: ${FORGED}`],
    ['True-Client-IP', `True-Client-IP: ${FORGED}`],
    ['CF-Connecting-IP', `CF-Connecting-IP: ${FORGED}`],
    ['X-Cluster-Client-IP', `X-Cluster-Client-IP: ${FORGED}`],
    ['Client-IP', `Client-IP: ${FORGED}`],
    ['Fastly-Client-IP', `Fastly-Client-IP: ${FORGED}`],
    ['X-Real-IP', `X-Real-IP: ${FORGED}`],
    ['X-Original-URL', 'X-Original-URL: /admin/delete-everything'],
    ['X-Rewrite-URL', 'X-Rewrite-URL: /admin/delete-everything'],
    ['X-HTTP-Method-Override', 'X-HTTP-Method-Override: DELETE'],
    ['X-HTTP-Method', 'X-HTTP-Method: DELETE'],
    ['X-Method-Override', 'X-Method-Override: DELETE'],
    ['x-gatehouse-* the gateway does not set', 'X-Gatehouse-Roles: admin'],
    ['x-gatehouse-* that looks like configuration', 'x-gatehouse-tenant: other-tenant'],
    ['x_client_ip (underscores)', `x_client_ip: ${FORGED}`],
    ['True.Client.IP (dots)', `True.Client.IP: ${FORGED}`],
    ['x_http_method_override (underscores)', 'x_http_method_override: DELETE'],
    ['X_Gatehouse_Roles (underscores)', 'X_Gatehouse_Roles: admin'],
  ])('%s never reaches the backend', async (_name, line) => {
    const name = line.slice(0, line.indexOf(':')).toLowerCase();
    for (const [path, extra] of [
      ['/api/x', [auth]],
      ['/public/x', []],
    ] as const) {
      const headers = await received(gw, path, [...extra, line]);
      expect(headers[name], `${name} on ${path}`).toBeUndefined();
      expect(JSON.stringify(headers)).not.toMatch(/203\.0\.113\.66|delete-everything|DELETE|"admin"|other-tenant/);
    }
  });

  it("the gateway's own identity headers still reach the backend", async () => {
    const headers = await received(gw, '/api/x', [auth, 'X-Gatehouse-Username: mallory']);
    expect(headers['x-gatehouse-username']).toBe('alice');
    expect(headers['x-gatehouse-subject']).toEqual(expect.any(String));
    expect(headers['x-request-id']).toEqual(expect.any(String));
  });

  it('a header the operator allows by name passes, in any spelling; the others stay removed', async () => {
    const headers = await received(allowing, '/public/x', [
      `True-Client-IP: ${FORGED}`,
      'X-HTTP-Method-Override: PATCH',
      'x_gatehouse_tenant: acme',
      `CF-Connecting-IP: ${FORGED}`,
      'X-Gatehouse-Roles: admin',
    ]);
    expect(headers['true-client-ip']).toBe(FORGED);
    expect(headers['x-http-method-override']).toBe('PATCH');
    expect(headers.x_gatehouse_tenant).toBe('acme');
    expect(headers['cf-connecting-ip']).toBeUndefined();
    expect(headers['x-gatehouse-roles']).toBeUndefined();
  });
});

describe('proxy.allowClientHeaders', () => {
  const identityHeaders: IdentityHeaderNames = {
    subject: 'x-gatehouse-subject',
    username: 'x-gatehouse-username',
    session: 'x-gatehouse-session',
    tokenType: 'x-gatehouse-token-type',
    authMethod: 'x-gatehouse-auth-method',
    keyThumbprint: 'x-gatehouse-dpop-jkt',
    provider: 'x-gatehouse-provider',
    assertion: 'x-gatehouse-assertion',
  };
  const policy = (allowClientHeaders: string[]) => new HeaderPolicy({ identityHeaders, clientAddress: compileClientAddress([]), allowClientHeaders });

  it('refuses an identity header or X-Request-Id: only the gateway sets those', () => {
    expect(() => policy(['X-Gatehouse-Username'])).toThrow('"x-gatehouse-username" is set by the gateway alone');
    expect(() => policy(['x-request-id'])).toThrow('is set by the gateway alone');
  });

  it('refuses a header the gateway does not remove anyway', () => {
    expect(() => policy(['x-forwarded-for'])).toThrow('"x-forwarded-for" is not a header the gateway removes');
    expect(() => policy(['authorization'])).toThrow('is not a header the gateway removes');
  });

  it('is empty by default', () => {
    expect(gw.config.proxy.allowClientHeaders).toEqual([]);
  });
});
