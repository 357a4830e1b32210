// Node's HTTP/2 client for the tests: a session to a TLS listener that trusts
// the test's own certificate, and one request on it read whole.
import { once } from 'node:events';
import { connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type IncomingHttpStatusHeader, type OutgoingHttpHeaders } from 'node:http2';

export interface H2Answer {
  status: number;
  headers: IncomingHttpHeaders & IncomingHttpStatusHeader;
  body: string;
}

/** A session to `url` (https://), trusting `ca`; resolves once it is connected, h2 negotiated by ALPN. */
export async function h2Session(url: string, ca: Buffer): Promise<ClientHttp2Session> {
  const session = connect(url, { ca, servername: 'localhost' });
  session.on('error', () => undefined);
  await once(session, 'connect');
  return session;
}

/** One request on `session`, its answer read whole. */
export async function h2Request(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  const stream = session.request(headers, { endStream: body === undefined });
  if (body !== undefined) stream.end(body);
  const [answer] = (await once(stream, 'response')) as [IncomingHttpHeaders & IncomingHttpStatusHeader];
  stream.setEncoding('utf8');
  let text = '';
  for await (const chunk of stream) text += chunk as string;
  return { status: Number(answer[':status']), headers: answer, body: text };
}

/**
 * The rapid-reset pattern (CVE-2023-44487): `count` streams, each opened and
 * cancelled at once. Resolves with the error code of the GOAWAY the server sends.
 */
export async function rapidResets(session: ClientHttp2Session, count: number, pathPrefix: string): Promise<number> {
  const goaway = once(session, 'goaway') as Promise<[number]>;
  for (let i = 0; i < count; i += 1) {
    const stream = session.request({ ':method': 'GET', ':path': `${pathPrefix}${i}` });
    stream.on('error', () => undefined);
    stream.close(constants.NGHTTP2_CANCEL);
  }
  const [code] = await goaway;
  return code;
}
