// Path tricks end to end: a public `auth: none` route and a protected one on
// separate upstreams, each trick written raw (fetch would normalise it) and
// sent WITHOUT a token. The protected upstream must never hear of any of
// them, and the answer is a refusal with a diagnostics body: never 200,
// never 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let publicSite: Upstream;
let admin: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  [publicSite, admin] = await Promise.all([startUpstream(), startUpstream()]);
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'public', prefix: '/public', upstreams: [publicSite.url], auth: 'none' },
        { name: 'admin', prefix: '/admin', upstreams: [admin.url] },
      ],
    },
  });
});
afterAll(async () => {
  await gw.close();
  await Promise.all([publicSite.close(), admin.close()]);
});

type Diagnostics = { $diagnoses: Array<{ $severity: string; $message: string; $detail: string }> };

const climbsOut = /^400 \(Bad Request\) - invalid_request: path climbs out of its route$/;
const invalid = (reason: string) => new RegExp(`^400 \\(Bad Request\\) - invalid_request: ${reason}$`);
const noToken = /^401 \(Unauthorized\) - invalid_token: no bearer token was given$/;
const notFound = /^404 \(Not Found\) - not_found: no route matches the request$/;

describe('path tricks without a token', () => {
  it.each([
    ['/public/../admin', 400, climbsOut],
    ['/public/%2e%2e/admin', 400, climbsOut],
    ['/public/%2E%2E/admin', 400, climbsOut],
    ['/public/.%2e/admin', 400, climbsOut],
    ['/public/%2e./admin', 400, climbsOut],
    ['/public/./../admin', 400, climbsOut],
    ['/public;/../admin', 400, climbsOut],
    ['/PUBLIC/../admin', 400, climbsOut],
    ['/public/..%2fadmin', 400, invalid('encoded slash in path')],
    ['/public/..%2Fadmin', 400, invalid('encoded slash in path')],
    ['/public/%2e%2e%2fadmin', 400, invalid('encoded slash in path')],
    ['/public/..%5cadmin', 400, invalid('backslash in path')],
    ['/public/..%5Cadmin', 400, invalid('backslash in path')],
    ['/public/..\\admin', 400, invalid('backslash in path')],
    ['/public/..;/admin', 400, invalid('dot segment with parameters')],
    ['/public/..;jsessionid=1/admin', 400, invalid('dot segment with parameters')],
    ['//admin', 401, noToken],
    ['///admin/', 401, noToken],
    ['/%61dmin', 401, noToken],
    ['/admin/../public', 400, climbsOut],
    ['/admin/..%2fpublic', 400, invalid('encoded slash in path')],
    ['/public/%00/../admin', 400, invalid('control character in path')],
    ['/public/%0d%0a/../admin', 400, invalid('control character in path')],
    ['/../admin', 400, invalid('path climbs above the root')],
    ['/public/../../admin', 400, invalid('path climbs above the root')],
    ['/public/%2e%2e/%2e%2e/admin', 400, invalid('path climbs above the root')],
    ['/public/../ADMIN', 400, climbsOut],
    ['/ADMIN/panel', 401, noToken],
    ['/elsewhere', 404, notFound],
    ['http://127.0.0.1/public/../admin', 400, climbsOut],
    ['http://evil.example//admin', 401, noToken],
  ])('%s → %i, and the protected upstream never hears of it', async (path, status, detail) => {
    const before = { admin: admin.seen.length, publicSite: publicSite.seen.length };
    const response = await rawRequest(gw.url, [`GET ${path} HTTP/1.1`]);
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(response.body) as Diagnostics;
    expect(body).toEqual({ $diagnoses: [{ $severity: 'error', $message: expect.any(String), $detail: expect.stringMatching(detail) }] });
    expect(admin.seen.length).toBe(before.admin);
    // A refusal reaches no upstream at all, the public one included.
    expect(publicSite.seen.length).toBe(before.publicSite);
  });

  it.each(['POST', 'DELETE', 'PUT'])('%s /public/../admin is refused the same way (with a body)', async (method) => {
    const response = await rawRequest(gw.url, [`${method} /public/../admin HTTP/1.1`, 'content-type: application/json'], '{"role":"admin"}');
    expect(response.status).toBe(400);
    expect(admin.seen.length).toBe(0);
  });

  it('/public/%252e%252e/admin is refused: `..` to a backend that decodes twice', async () => {
    const response = await rawRequest(gw.url, ['GET /public/%252e%252e/admin HTTP/1.1']);
    expect(response.status).toBe(400);
    expect(publicSite.seen.length + admin.seen.length).toBe(0);
  });

  it('none of them was answered with a 500, and the protected upstream saw nothing', () => {
    const statuses = gw.logs
      .entries()
      .filter((entry) => entry.kind === 'proxy')
      .map((entry) => entry.status);
    expect(statuses.length).toBeGreaterThan(30);
    expect(statuses).not.toContain(500);
    expect(admin.seen).toEqual([]);
  });
});

describe('the protected route itself (the contrast)', () => {
  it('is reached with a token, and only then', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const response = await rawRequest(gw.url, ['GET //admin/../admin/panel HTTP/1.1', `authorization: Bearer ${tokens.access_token}`]);
    expect(response.status).toBe(200);
    expect((JSON.parse(response.body) as EchoBody).url).toBe('/admin/panel');
    expect(admin.seen).toHaveLength(1);
  });
});
