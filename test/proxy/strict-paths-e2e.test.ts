// Attack 6 end to end: `/site` is public, `/site/admin` protected, and both go
// to ONE backend that records every request it receives, as Tomcat, Jetty,
// Spring, IIS or a case-insensitive router behind a gateway would. Each
// spelling below reads as `/site/admin/users` to some such backend; sent
// without a token, none may reach it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

let backend: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  backend = await startUpstream();
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'site', prefix: '/site', upstreams: [backend.url], auth: 'none' },
        { name: 'site-admin', prefix: '/site/admin', upstreams: [backend.url] },
        // A backend that needs `;` parameters (session ids in URLs) opts out.
        { name: 'legacy', prefix: '/legacy', upstreams: [backend.url], auth: 'none', strictPaths: false },
        { name: 'legacy-admin', prefix: '/legacy/admin', upstreams: [backend.url], strictPaths: false },
      ],
    },
  });
});
afterAll(async () => {
  await gw.close();
  await backend.close();
});

const refused = (reason: string) => new RegExp(`^400 \\(Bad Request\\) - invalid_request: ${reason.replace(/[()]/g, '\\$&')}$`);
const noToken = /^401 \(Unauthorized\) - invalid_token: no bearer token was given$/;

async function sendWithoutToken(path: string): Promise<{ status: number; detail: string; reached: boolean }> {
  const before = backend.seen.length;
  const response = await rawRequest(gw.url, [`GET ${path} HTTP/1.1`]);
  const body = JSON.parse(response.body) as { $diagnoses?: Array<{ $detail: string }> };
  return { status: response.status, detail: body.$diagnoses?.[0]?.$detail ?? '', reached: backend.seen.length !== before };
}

describe('attack 6: path spellings that reach a protected route', () => {
  it.each([
    ['/site/admin;x/users', 400, refused('parameters (;) in path')],
    ['/site/admin;jsessionid=0/users', 400, refused('parameters (;) in path')],
    ['/site/admin%3Bx/users', 400, refused('parameters (;) in path')],
    ['/site/admin%3bx/users', 400, refused('parameters (;) in path')],
    ['/site/x/..;/admin/users', 400, refused('dot segment with parameters')],
    ['/site/x/..%3B/admin/users', 400, refused('parameters (;) in path')],
    ['/site/Admin/users', 401, noToken],
    ['/site/ADMIN/users', 401, noToken],
    ['/SITE/admin/users', 401, noToken],
    ['/site/admin./users', 400, refused('path segment ends in a dot or a space')],
    ['/site/admin%2e/users', 400, refused('path segment ends in a dot or a space')],
    ['/site/admin%20/users', 400, refused('path segment ends in a dot or a space')],
    ['/site/admin.%20/users', 400, refused('path segment ends in a dot or a space')],
    ['/site/%2561dmin/users', 400, refused('double percent-encoding in path')],
    ['/site/x/%252e%252e/admin/users', 400, refused('double percent-encoding in path')],
    ['/site/x/%c0%ae%c0%ae/admin/users', 400, refused('percent-encoded bytes in path are not UTF-8')],
    ['/site/x/%e0%80%ae%e0%80%ae/admin/users', 400, refused('percent-encoded bytes in path are not UTF-8')],
    ['/site/%c1%a1dmin/users', 400, refused('percent-encoded bytes in path are not UTF-8')],
    ['/site/admin%00/users', 400, refused('control character in path')],
    ['/site/admin%5cusers', 400, refused('backslash in path')],
    // The same spellings on routes that opt out of strict paths: still never the protected route.
    ['/legacy/admin;x/users', 400, refused('path reads as another route')],
    ['/legacy/admin%3Bx/users', 400, refused('path reads as another route')],
    ['/legacy/Admin/users', 401, noToken],
    ['/legacy/admin./users', 400, refused('path reads as another route')],
    ['/legacy/admin%20/users', 400, refused('path reads as another route')],
    ['/legacy/%2561dmin/users', 400, refused('path reads as another route')],
    ['/legacy/x/%c0%ae%c0%ae/admin/users', 400, refused('path reads as another route')],
  ])('%s → %i, and the backend never receives it', async (path, status, detail) => {
    const answer = await sendWithoutToken(path);
    expect(answer.status).toBe(status);
    expect(answer.detail).toMatch(detail);
    expect(answer.reached).toBe(false);
  });

  it('the public route itself is still served, and an opted-out route gets its parameters', async () => {
    const plain = await rawRequest(gw.url, ['GET /site/index.html HTTP/1.1']);
    expect(plain.status).toBe(200);
    expect((JSON.parse(plain.body) as EchoBody).url).toBe('/site/index.html');
    const withSession = await rawRequest(gw.url, ['GET /legacy/page;jsessionid=0F3A HTTP/1.1']);
    expect(withSession.status).toBe(200);
    expect((JSON.parse(withSession.body) as EchoBody).url).toBe('/legacy/page;jsessionid=0F3A');
  });

  it('a path that folds into the protected route reaches it with a token, as sent', async () => {
    const { access_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    const response = await rawRequest(gw.url, ['GET /site/Admin/users HTTP/1.1', `authorization: Bearer ${token}`]);
    expect(response.status).toBe(200);
    const seen = JSON.parse(response.body) as EchoBody;
    expect(seen.url).toBe('/site/Admin/users');
    expect(seen.headers['x-gatehouse-username']).toBe('alice');
  });
});
