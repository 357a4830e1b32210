// The one writer of error responses: what an error becomes, and the same
// answer whichever way it leaves — a Fastify reply (a gateway endpoint), a
// node:http response (the proxy), a raw socket (a request Node's parser
// refused, a refused WebSocket upgrade).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { oauthErrorOf, renderError, renderOAuthError, responseHead } from '../../src/http/error-response.js';
import { gatehouseError } from '../../src/core/errors.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawExchange } from '../helpers/raw-exchange.js';
import { rawUpgrade } from '../helpers/ws.js';

describe('renderError', () => {
  it("gives the status, the error's own headers, the body's type and length, and the request id", () => {
    const error = gatehouseError('store_unavailable', { headers: { 'Retry-After': '1' } });
    const { status, headers, body } = renderError(error, 'req-1');
    expect(status).toBe(503);
    expect(headers).toEqual({
      'Retry-After': '1',
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': 'req-1',
    });
    expect(JSON.parse(body)).toEqual({
      $diagnoses: [
        { $severity: 'error', $message: error.publicMessage, $detail: '503 (Service Unavailable) - temporarily_unavailable: state store unavailable' },
      ],
    });
  });

  it("never shows a server error's cause", () => {
    const { body } = renderError(gatehouseError('internal_error', { reason: 'ECONNRESET at 10.0.0.7', cause: new Error('boom') }));
    expect(body).not.toContain('10.0.0.7');
    expect(body).not.toContain('boom');
  });
});

describe('renderOAuthError', () => {
  it("gives an RFC 6749 5.2 error object with the error's own headers, never cached (5.1: no-store and no-cache)", () => {
    const error = gatehouseError('too_many_requests', { reason: 'too many refused requests from this address', headers: { 'retry-after': '30' } });
    const { status, headers, body } = renderOAuthError(oauthErrorOf(error), 'req-2');
    expect(status).toBe(429);
    expect(headers).toEqual({
      'retry-after': '30',
      'cache-control': 'no-store',
      pragma: 'no-cache',
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      'x-request-id': 'req-2',
    });
    expect(JSON.parse(body)).toEqual({ error: error.oauthError, error_description: 'too many refused requests from this address' });
  });
});

describe('responseHead', () => {
  it('writes one line per value of a repeated header and ends with the blank line', () => {
    expect(responseHead(404, { 'set-cookie': ['a=1', 'b=2'], 'x-one': 'y', skipped: undefined })).toBe(
      'HTTP/1.1 404 Not Found\r\nset-cookie: a=1\r\nset-cookie: b=2\r\nx-one: y\r\n\r\n',
    );
  });
});

describe('every way out renders the same error the same way', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({ config: { routes: [{ prefix: '/nowhere-else', upstreams: ['http://127.0.0.1:9'] }] } });
  });
  afterAll(async () => {
    await gw.close();
  });

  /** The parts every writer must agree on. */
  function shape(response: { status: number; headers: Record<string, string>; body: string }) {
    return {
      status: response.status,
      type: response.headers['content-type'],
      length: Number(response.headers['content-length']),
      body: JSON.parse(response.body),
    };
  }

  it('a gateway endpoint (Fastify), the proxy (node:http) and an upgrade (raw socket) answer a missing token alike', async () => {
    const viaFastify = await rawExchange(gw.url, [
      'POST /api/v1/auth/logout HTTP/1.1',
      `host: ${new URL(gw.url).host}`,
      'connection: close',
      'content-length: 0',
    ]);
    const viaProxy = await rawExchange(gw.url, ['GET /nowhere-else HTTP/1.1', `host: ${new URL(gw.url).host}`, 'connection: close']);
    const viaSocket = await rawUpgrade(gw.url, '/nowhere-else');
    const expected = shape(viaFastify);
    expect(expected.status).toBe(401);
    expect(shape(viaProxy)).toEqual(expected);
    expect(shape(viaSocket)).toEqual(expected);
    for (const response of [viaFastify, viaProxy, viaSocket]) {
      expect(response.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
      expect(response.headers['x-request-id']).toMatch(/\S/);
    }
  });

  it("a request Node's parser refuses is answered in the diagnostics format, on the raw socket", async () => {
    const response = await rawExchange(gw.url, ['GET /nowhere-else HTTP/1.1', 'host: a', 'bad header line without a colon']);
    expect(response.status).toBe(400);
    expect(response.headers.connection).toBe('close');
    expect(JSON.parse(response.body).$diagnoses[0].$detail).toBe('400 (Bad Request) - invalid_request: the request is not valid HTTP/1.1');
  });

  it("request headers over Node's limit are named as such", async () => {
    const response = await rawExchange(gw.url, ['GET /nowhere-else HTTP/1.1', 'host: a', `x-big: ${'a'.repeat(20_000)}`]);
    expect(response.status).toBe(400);
    expect(JSON.parse(response.body).$diagnoses[0].$detail).toBe('400 (Bad Request) - invalid_request: request headers are too large');
  });
});
