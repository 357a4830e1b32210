// What both listeners do before a request reaches a handler: Node's timers
// for its arrival, and a diagnostics answer for what Node's parser refuses.
import type { Socket } from 'node:net';
import { gatehouseError } from '../core/errors.js';
import { writeErrorToSocket } from '../http/error-response.js';

export function answerUnparsableRequest(error: Error & { code?: string }, socket: Socket): void {
  // Node's headersTimeout: the head did not arrive in time.
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    writeErrorToSocket(socket, gatehouseError('request_timeout'));
    return;
  }
  const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
  writeErrorToSocket(socket, gatehouseError('invalid_request', { reason: tooLarge ? 'request headers are too large' : 'the request is not valid HTTP/1.1' }));
}

/**
 * Node's timers for a request's arrival: the head within `headersTimeoutMs`,
 * the whole request within `requestTimeoutMs` (0: none). They are checked
 * every `connectionsCheckingInterval`, so that is kept well below them.
 */
export function arrivalTimeouts(headersTimeoutMs: number, requestTimeoutMs: number) {
  const shortest = requestTimeoutMs > 0 ? Math.min(headersTimeoutMs, requestTimeoutMs) : headersTimeoutMs;
  return {
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(30_000, Math.floor(shortest / 4))),
  };
}
