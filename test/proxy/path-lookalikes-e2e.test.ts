// Issue 22, paths, end to end: the spellings a lenient backend reads as
// another path (dot segments beside encoded slashes, Unicode look-alikes of
// `/`, `\`, `.` and `%`) sent to a real gateway, as plain requests and as
// WebSocket upgrades (both pass the one admission step). Each is answered 400
// with its reason, and the backend, which counts every TCP connection, never
// sees one; what stays in its route still goes through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { rawUpgrade, startWsUpstream, type WsUpstream } from '../helpers/ws.js';

let backend: WsUpstream;
let gw: TestGateway;

beforeAll(async () => {
  backend = await startWsUpstream();
  gw = await startTestGateway({
    config: {
      routes: [
        { name: 'files', prefix: '/files', upstreams: [backend.url], auth: 'none', allowEncodedSlashes: true, rewritePrefix: '/bucket/files' },
        { name: 'public', prefix: '/public', upstreams: [backend.url], auth: 'none' },
        { name: 'private', prefix: '/private', upstreams: [backend.url] },
        { name: 'site', prefix: '/site', upstreams: [backend.url], auth: 'none' },
        { name: 'site-admin', prefix: '/site/admin', upstreams: [backend.url] },
      ],
    },
  });
});
afterAll(async () => {
  await gw.close();
  await backend.close();
});

const DOT_BESIDE_SLASH = 'dot segment next to an encoded slash';
const LOOKALIKE = 'path holds a Unicode look-alike of / \\ . or %';

const detailOf = (body: string): string => (JSON.parse(body) as { $diagnoses: Array<{ $detail: string }> }).$diagnoses[0]!.$detail;

describe('paths a lenient backend reads as another, refused before any upstream', () => {
  it.each([
    ['/files/..%2F..%2Fprivate/x', DOT_BESIDE_SLASH],
    ['/files/%2e%2e%2F%2e%2e%2Fprivate/x', DOT_BESIDE_SLASH],
    ['/files/..%2f..%2f..%2f..%2fetc%2fpasswd', DOT_BESIDE_SLASH],
    ['/files/%2E%2e%2f.%2E%2Fprivate/x', DOT_BESIDE_SLASH],
    ['/files/a/%2e%2e/..%2Fprivate/x', DOT_BESIDE_SLASH],
    ['/files/..%5C..%5Cprivate/x', 'backslash in path'],
    ['/public/..%EF%BC%8Fprivate/x', LOOKALIKE],
    ['/public/..%E2%88%95private/x', LOOKALIKE],
    ['/public/..%E2%81%84private/x', LOOKALIKE],
    ['/public/..%E2%A7%B8private/x', LOOKALIKE],
    ['/public/..%EF%BC%BCprivate/x', LOOKALIKE],
    ['/public/%EF%BC%8E%EF%BC%8E/private/x', LOOKALIKE],
    ['/public/%E2%80%A4%E2%80%A4/private/x', LOOKALIKE],
    ['/public/%EF%BC%852e%EF%BC%852e/private/x', LOOKALIKE],
    ['/site/admin%EF%BC%8Fusers', LOOKALIKE],
    ['/site/%EF%BD%81dmin/users', 'path reads as another route'],
    ['/site/%25%36%31dmin/users', 'double percent-encoding in path'],
  ])('%s', async (path, reason) => {
    const before = backend.connections;
    const plain = await rawRequest(gw.url, [`GET ${path} HTTP/1.1`]);
    expect(plain.status).toBe(400);
    expect(detailOf(plain.body)).toBe(`400 (Bad Request) - invalid_request: ${reason}`);
    const upgrade = await rawUpgrade(gw.url, path);
    expect(upgrade.status).toBe(400);
    expect(detailOf(upgrade.body)).toBe(`400 (Bad Request) - invalid_request: ${reason}`);
    expect(backend.connections).toBe(before);
  });

  it('an encoded slash or a non-ASCII character that stays in its route goes through, as sent', async () => {
    const plain = await rawRequest(gw.url, ['GET /files/a%2Fb/c HTTP/1.1']);
    expect(plain.status).toBe(426); // the backend's own answer to a plain request
    const upgrade = await rawUpgrade(gw.url, '/files/a%2fb/caf%C3%A9');
    expect(upgrade.status).toBe(101);
    expect(backend.handshakes.at(-1)!.url).toBe('/bucket/files/a%2Fb/caf%C3%A9');
  });
});
