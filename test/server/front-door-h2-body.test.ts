// The front door's refusals on HTTP/2: a refused request whose body is still
// on its way (a stream left open after its headers, no Content-Length) is
// answered as one whose body was not read, as on HTTP/1.1. The OAuth endpoints
// get their refusal as an OAuth error object, never cached.
import { once } from 'node:events';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { connect, createServer, type IncomingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbuseLimitsSchema } from '../../src/config/flood-schema.js';
import { AbuseGuard } from '../../src/limits/abuse-guard.js';
import { FrontDoor } from '../../src/server/front-door.js';

const abuse = new AbuseGuard(AbuseLimitsSchema.parse({ refuseAfterStrikes: 1, holdMs: 0 }));
const front = new FrontDoor({
  abuse,
  passwordHashing: { refusesSuspect: () => false, retryAfterS: 1 } as never,
  load: { shedsUnauthenticated: false, shedsAll: false, retryAfterS: 1 },
  bearer: { admitsFromMemory: () => false },
  metrics: { shedRequests: { inc: () => undefined } } as never,
  // 127.0.0.1 speaks for many and is never struck: the test's requests come from 127.0.0.2.
  clientAddress: { of: () => '127.0.0.2' } as never,
});

/** The head each refusal was written with, as the front door gave it to the response. */
let written: (head: OutgoingHttpHeaders) => void = () => undefined;
const server = createServer((req, res) => {
  const response = res as unknown as ServerResponse;
  const writeHead = response.writeHead.bind(response) as (status: number, headers: OutgoingHttpHeaders) => ServerResponse;
  (response as unknown as { writeHead: typeof writeHead }).writeHead = (status, headers) => {
    written(headers);
    const { connection: _dropped, ...allowed } = headers;
    return writeHead(status, allowed);
  };
  if (!front.refuses(req as unknown as IncomingMessage, response)) res.end('served');
});

beforeAll(async () => {
  abuse.strike('127.0.0.2');
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
});

afterAll(() => {
  abuse.close();
  server.close();
});

async function refuse(path: string, body?: string): Promise<{ head: OutgoingHttpHeaders; answer: IncomingHttpHeaders; text: string }> {
  const head = new Promise<OutgoingHttpHeaders>((resolve) => (written = resolve));
  const session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  const stream = session.request({ ':method': 'POST', ':path': path }, { endStream: body === undefined });
  stream.on('error', () => undefined);
  if (body !== undefined) stream.write(body);
  const [answer] = (await once(stream, 'response')) as [IncomingHttpHeaders];
  stream.setEncoding('utf8');
  let text = '';
  stream.on('data', (chunk: string) => (text += chunk));
  await once(stream, 'end');
  session.close();
  return { head: await head, answer, text };
}

describe('front door refusals on HTTP/2', () => {
  it('a body of unknown length still arriving: answered as unread, the connection not kept for it', async () => {
    const { head, answer } = await refuse('/auth/login', 'partial');
    expect(answer[':status']).toBe(429);
    expect(head.connection).toBe('close');
  });

  it('no body (END_STREAM with the headers): nothing to close for', async () => {
    const { head, answer } = await refuse('/auth/login');
    expect(answer[':status']).toBe(429);
    expect(head.connection).toBeUndefined();
  });

  it('on an OAuth endpoint: an OAuth error object with no-store and no-cache', async () => {
    const { answer, text } = await refuse('/oauth/token', 'grant_type=password');
    expect(answer[':status']).toBe(429);
    expect(answer['cache-control']).toBe('no-store');
    expect(answer.pragma).toBe('no-cache');
    expect(answer['retry-after']).toBeDefined();
    expect(JSON.parse(text)).toEqual({ error: 'slow_down', error_description: 'too many refused requests from this address' });
  });
});
