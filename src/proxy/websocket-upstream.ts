// The upstream side of a WebSocket tunnel: a `ws` client opening, on the
// target admission's route chose, the WebSocket the client asked for. It is
// opened before the client's is accepted, so that whatever the upstream
// answers (101, its own refusal, nothing in time) can still be told to the
// client as an HTTP answer.
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
import type { LookupFunction } from 'node:net';
import { WebSocket, type ClientOptions } from 'ws';
import { gatehouseError } from '../core/errors.js';
import { CONNECT_TIMEOUT, RESPONSE_TIMEOUT, UpstreamTimeoutError } from './upstream-errors.js';
import type { UpstreamTarget } from './upstream-pool.js';
import type { UpstreamTls } from './upstream-tls.js';

export interface UpstreamDial {
  target: UpstreamTarget;
  /** The normalised, rewritten path with the client's query, sent as the HTTP proxy would send it. */
  path: string;
  /** The request headers admission built; the handshake's own are replaced by the client's. */
  headers: OutgoingHttpHeaders;
  /** The client's subprotocols, the token's excepted. */
  protocols: readonly string[];
  connectTimeoutMs: number;
  /** From the request sent to the upstream's answer. */
  responseTimeoutMs: number;
  /** The route's TLS settings for a wss (https://) target: CAs, SNI, client certificate (HTTP/2 does not apply). */
  tls?: UpstreamTls | undefined;
}

export type UpstreamAnswer =
  /** 101: the upstream WebSocket is open; its response headers are for the client's 101. */
  | { accepted: true; upstream: WebSocket; headers: IncomingHttpHeaders }
  /** Any other answer, to pass on to the client as it is. */
  | { accepted: false; response: IncomingMessage };

export interface UpstreamHandshake {
  /** Rejects with the transport error (an UpstreamTimeoutError when an answer was late). */
  readonly answer: Promise<UpstreamAnswer>;
  /** Gives the upstream up: its handshake, the refusal being passed on, or its open WebSocket. */
  abandon(): void;
}

/** Headers of the client's handshake that the `ws` client writes itself, for its own connection. */
const HANDSHAKE_HEADERS = [
  'sec-websocket-key',
  'sec-websocket-version',
  'sec-websocket-extensions',
  'sec-websocket-protocol',
  'sec-websocket-accept',
  // Meaningless on an upgrade, and it would make Node write the request line before the path below is set.
  'expect',
];

export interface UpstreamSocketSettings {
  maxPayload: number;
  closeTimeoutMs: number;
  /** How the connection resolves the target's host name (the gateway's DNS cache); node's own otherwise. */
  lookup?: LookupFunction | undefined;
}

/**
 * Starts the handshake with the upstream. Throws a GatehouseError
 * (`invalid_request`) at once when the client's subprotocols cannot be sent.
 */
export function dialUpstream(dial: UpstreamDial, settings: UpstreamSocketSettings): UpstreamHandshake {
  const headers: OutgoingHttpHeaders = { ...dial.headers };
  for (const name of HANDSHAKE_HEADERS) delete headers[name];
  const options: ClientOptions & { closeTimeout: number } = {
    headers: headers as Record<string, string>,
    // Each hop negotiates its own extensions; the gateway relays messages, not frames.
    perMessageDeflate: false,
    // Pings and pongs are relayed, so a client's ping is answered by the upstream itself.
    autoPong: false,
    followRedirects: false,
    maxPayload: settings.maxPayload,
    closeTimeout: settings.closeTimeoutMs,
    ...(settings.lookup !== undefined && { lookup: settings.lookup }),
    ...(dial.target.protocol === 'https:' && dial.tls?.connect),
    finishRequest: (request: ClientRequest) => {
      // The path exactly as routing decided it: the URL parser `ws` reads
      // addresses with would re-encode some characters the HTTP proxy passes on.
      request.path = dial.path;
      limitHandshake(request, dial.connectTimeoutMs, dial.responseTimeoutMs);
      request.end();
    },
  };
  let upstream: WebSocket;
  try {
    upstream = new WebSocket(dial.target.origin, [...dial.protocols], options);
  } catch (error) {
    // `ws` checks subprotocols as it builds the request: the client offered a malformed or repeated one.
    throw gatehouseError('invalid_request', { reason: 'Sec-WebSocket-Protocol is not a list of distinct tokens', cause: error });
  }
  let abandoned = false;
  const answer = new Promise<UpstreamAnswer>((resolve, reject) => {
    let upgradeHeaders: IncomingHttpHeaders = {};
    upstream.once('upgrade', (response: IncomingMessage) => (upgradeHeaders = response.headers));
    upstream.once('open', () => resolve({ accepted: true, upstream, headers: upgradeHeaders }));
    upstream.once('unexpected-response', (_request: ClientRequest, response: IncomingMessage) => resolve({ accepted: false, response }));
    // After an answer, errors belong to whoever holds the socket (the relay adds its own listener).
    upstream.on('error', (error: Error) => {
      if (!abandoned) reject(error);
    });
  });
  return {
    answer,
    abandon: () => {
      abandoned = true;
      upstream.terminate();
    },
  };
}

/**
 * The route's connect and response timeouts on the handshake (`ws` has one
 * overall handshake timeout; a route has these two, as for HTTP): an upstream
 * that accepts the connection and never answers must not hold the client.
 */
function limitHandshake(request: ClientRequest, connectTimeoutMs: number, responseTimeoutMs: number): void {
  let timer: NodeJS.Timeout | undefined;
  let answered = false;
  const arm = (code: typeof CONNECT_TIMEOUT | typeof RESPONSE_TIMEOUT, ms: number) => {
    clearTimeout(timer);
    if (!answered) timer = setTimeout(() => request.destroy(new UpstreamTimeoutError(code, ms)), ms);
  };
  const disarm = () => {
    answered = true;
    clearTimeout(timer);
  };
  arm(CONNECT_TIMEOUT, connectTimeoutMs);
  request.once('socket', (socket: Socket) => {
    if (socket.connecting) socket.once('connect', () => arm(RESPONSE_TIMEOUT, responseTimeoutMs));
    else arm(RESPONSE_TIMEOUT, responseTimeoutMs);
  });
  for (const event of ['response', 'upgrade', 'error', 'close']) request.once(event, disarm);
}
