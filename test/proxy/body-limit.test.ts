// Per-route request body limits, end to end: a declared length over the limit
// is refused before anything goes upstream; a chunked body is cut off the
// moment it passes the limit and its upstream request aborted; a body within
// the limit arrives intact.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses, expectNoInternalErrors } from '../helpers/diagnoses.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { parseHead, rawConnection, send } from '../helpers/http-client.js';
import { Arrivals, startUpstream, type EchoBody, type Upstream } from '../helpers/upstream.js';

const LIMIT = 1024;
const TOO_LARGE = '413 (Payload Too Large) - invalid_request: request body exceeds the limit';

const seen = new Arrivals();
/** Echoes the body once it has all come; records every request, finished or not. */
function recording(req: IncomingMessage, res: ServerResponse): void {
  seen.record(req, res);
  const body: Buffer[] = [];
  req.on('data', (chunk: Buffer) => body.push(chunk));
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(body).toString('utf8') }));
  });
}

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream(recording);
  gw = await startTestGateway({
    config: { routes: [{ name: 'limited', prefix: '/limited', upstreams: [upstream.url], auth: 'none', bodyLimitBytes: LIMIT }] },
  });
});

afterAll(async () => {
  expectNoInternalErrors(gw.logs);
  await gw?.close();
  await upstream?.close();
});

describe('body limits', () => {
  it('refuses a declared Content-Length over the limit with 413 before the upstream sees anything', async () => {
    const conn = await rawConnection(gw.url);
    conn.socket.write(`POST /limited/declared HTTP/1.1\r\nhost: gw\r\ncontent-type: application/octet-stream\r\ncontent-length: ${2 * LIMIT}\r\n\r\n`);
    conn.socket.write(Buffer.alloc(2 * LIMIT, 0x61));
    const data = await conn.waitFor('"}]}');
    const head = parseHead(data);
    expectDiagnoses(head.status, head.rest, 413, TOO_LARGE);
    // The body was never read: the connection cannot be reused.
    expect(head.headers.get('connection')).toEqual(['close']);
    await conn.closed;
    expect(upstream.seen.filter((entry) => entry.url === '/limited/declared')).toHaveLength(0);
  });

  it('cuts off a chunked body that passes the limit with 413 and aborts its upstream request', async () => {
    const conn = await rawConnection(gw.url);
    conn.socket.write('POST /limited/chunked HTTP/1.1\r\nhost: gw\r\ncontent-type: application/octet-stream\r\ntransfer-encoding: chunked\r\n\r\n');
    const chunk = `258\r\n${'b'.repeat(600)}\r\n`;
    conn.socket.write(chunk);
    // The request is under way upstream before the body passes the limit.
    const upstreamSaw = await seen.of('/limited/chunked');
    await upstreamSaw.firstBytes;
    conn.socket.write(chunk);
    const data = await conn.waitFor('"}]}');
    const head = parseHead(data);
    expectDiagnoses(head.status, head.rest, 413, TOO_LARGE);
    expect(head.headers.get('connection')).toEqual(['close']);
    // Aborted at once: the route's deadlines (30 s) are far off, so only the cut can have closed it.
    await upstreamSaw.gone;
    expect(upstreamSaw.ended).toBe(false);
    expect(upstreamSaw.bytes).toBeLessThanOrEqual(LIMIT);
    // And the client's connection, its body unread, is closed rather than left hanging.
    await conn.closed;
  });

  it.each([
    ['a Content-Length body just under the limit', { 'content-length': String(LIMIT - 1) }, LIMIT - 1],
    ['a chunked body of exactly the limit', {}, LIMIT],
  ])('passes %s intact', async (_case, headers, size) => {
    const body = Buffer.alloc(size, 0x63);
    body.write('start', 0);
    body.write('end', size - 3);
    // Without a Content-Length header, Node's client sends the body chunked.
    const response = await send(`${gw.url}/limited/ok-${size}`, {
      method: 'POST',
      headers: { 'content-type': 'application/octet-stream', ...headers },
      body: 'content-length' in headers ? body : Readable.from([body.subarray(0, 500), body.subarray(500)]),
    });
    expect(response.status).toBe(200);
    const echoed = JSON.parse(response.body.toString()) as EchoBody;
    expect(echoed.body).toBe(body.toString());
    // Framed either way: the engine may send a body it already holds whole with a length.
    const framing = echoed.headers['transfer-encoding'] ?? `length ${echoed.headers['content-length']}`;
    expect(['chunked', `length ${size}`]).toContain(framing);
  });
});
