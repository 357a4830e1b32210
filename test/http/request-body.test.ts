// Whether a request has a body, read from real requests on HTTP/1.1 and on
// cleartext HTTP/2: on h2 a body of unknown length has neither Content-Length
// nor Transfer-Encoding, only a HEADERS frame without END_STREAM.
import { once } from 'node:events';
import { createServer, request, type IncomingMessage } from 'node:http';
import { connect, createServer as createH2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasBody } from '../../src/http/request-body.js';

let seen: (verdict: boolean) => void = () => undefined;
const judged = () => new Promise<boolean>((resolve) => (seen = resolve));
function judge(req: IncomingMessage, res: { end(): void }): void {
  seen(hasBody(req));
  req.resume();
  res.end();
}

const h1 = createServer(judge);
const h2 = createH2Server((req, res) => judge(req as unknown as IncomingMessage, res));

beforeAll(async () => {
  h1.listen(0, '127.0.0.1');
  h2.listen(0, '127.0.0.1');
  await Promise.all([once(h1, 'listening'), once(h2, 'listening')]);
});

afterAll(() => {
  h1.close();
  h2.close();
});

async function overHttp1(method: string, headers: Record<string, string>, body?: string): Promise<boolean> {
  const verdict = judged();
  const req = request({ host: '127.0.0.1', port: (h1.address() as AddressInfo).port, method, headers });
  req.on('response', (res) => res.resume());
  req.end(body);
  return verdict;
}

async function overHttp2(headers: Record<string, string>, body?: string): Promise<boolean> {
  const verdict = judged();
  const session = connect(`http://127.0.0.1:${(h2.address() as AddressInfo).port}`);
  const stream = session.request({ ':method': 'POST', ':path': '/', ...headers }, { endStream: body === undefined });
  stream.on('error', () => undefined);
  stream.resume();
  // A body of unknown length: the stream stays open after its headers until the client ends it.
  if (body !== undefined) stream.write(body);
  const result = await verdict;
  stream.end();
  session.close();
  return result;
}

describe('hasBody', () => {
  it('HTTP/1.1: a declared length or a chunked body is a body; none, or a length of 0, is not', async () => {
    expect(await overHttp1('POST', { 'content-length': '5' }, 'hello')).toBe(true);
    expect(await overHttp1('POST', { 'transfer-encoding': 'chunked' }, 'hello')).toBe(true);
    expect(await overHttp1('POST', { 'content-length': '0' })).toBe(false);
    expect(await overHttp1('GET', {})).toBe(false);
  });

  it('HTTP/2: a stream left open after its headers, with no Content-Length, has a body', async () => {
    expect(await overHttp2({}, 'partial')).toBe(true);
  });

  it('HTTP/2: headers that end the stream, or a Content-Length of 0, mean no body', async () => {
    expect(await overHttp2({})).toBe(false);
    expect(await overHttp2({ 'content-length': '0' })).toBe(false);
    expect(await overHttp2({ 'content-length': '7' }, 'partial')).toBe(true);
  });
});
