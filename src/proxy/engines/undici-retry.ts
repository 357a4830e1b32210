// The keep-alive race, and its one retry: a request sent on a reused connection the backend was closing meets a
// closed connection before any answer, and is sent once more on a fresh connection.
//
// Invariants: retried only when the connection had served a request before, not one byte of the answer arrived, the
// request has no body, and the client is still there; once. The pool's clients count each connection's requests,
// and a handler records per attempt whether its connection was reused and whether the answer began.
// Why: docs/decisions/0007-retry-the-keep-alive-race-once.md
import { Client, type Dispatcher } from 'undici';
import { errorCode } from '../upstream-errors.js';

/** What one attempt learnt from undici, read when it fails. */
export interface Attempt {
  /** The connection it was written on had carried a request before. */
  reused: boolean;
  /** The first byte of the answer arrived (undici's parser began a message). */
  answered: boolean;
}

/**
 * Each request's attempt, kept on its dispatch options (the same object
 * reaches the pool's client). A property and not a WeakMap: a WeakMap written
 * for every request kept its young keys alive through V8's scavenges and
 * doubled the proxy's garbage-collection time (bench/profile.ts).
 */
const ATTEMPT = Symbol('keep-alive race attempt');
type Tracked = { [ATTEMPT]?: Attempt };

/** Records `attempt` for the request dispatched with `options`. */
export function trackAttempt(options: object): Attempt {
  const attempt: Attempt = { reused: false, answered: false };
  (options as Tracked)[ATTEMPT] = attempt;
  return attempt;
}

/** How a connection that was there closes under a request: the backend's FIN or reset. */
const CLOSED_UNDER_REQUEST = new Set(['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']);

/** The failure of the keep-alive race: a reused connection closed before the first byte of the answer. */
export function isKeepAliveRace(attempt: Attempt, error: unknown): boolean {
  const code = errorCode(error);
  return attempt.reused && !attempt.answered && code !== undefined && CLOSED_UNDER_REQUEST.has(code);
}

type Connector = (options: object, callback: (error: Error | null, socket: unknown) => void) => void;

/**
 * A pool's client that counts the requests its current connection carried.
 * (A client holds one connection at a time; its connector makes each new one.)
 */
export class CountingClient extends Client {
  readonly #connection: { requests: number };

  constructor(origin: URL, options: Client.Options) {
    const connection = { requests: 0 };
    const connect = options.connect as Connector;
    super(origin, {
      ...options,
      connect: ((connectOptions: object, callback: (error: Error | null, socket: unknown) => void) =>
        connect(connectOptions, (error, socket) => {
          if (error === null) connection.requests = 0;
          callback(error, socket);
        })) as Client.Options['connect'],
    });
    this.#connection = connection;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const attempt = (options as Tracked)[ATTEMPT];
    return super.dispatch(options, attempt === undefined ? handler : new AttemptHandler(handler, attempt, this.#connection));
  }
}

/**
 * undici's handler protocol as its Request calls it (the callbacks it marks
 * deprecated are the ones it still calls, and the only one that tells the
 * first byte of an answer): everything passes through, two facts are noted.
 */
class AttemptHandler implements Dispatcher.DispatchHandler {
  readonly #inner: Dispatcher.DispatchHandler;
  readonly #attempt: Attempt;
  readonly #connection: { requests: number };

  constructor(inner: Dispatcher.DispatchHandler, attempt: Attempt, connection: { requests: number }) {
    this.#inner = inner;
    this.#attempt = attempt;
    this.#connection = connection;
  }

  /** Called as the request is written on its connection. */
  onConnect(abort: (error?: Error) => void): void {
    this.#attempt.reused = this.#connection.requests > 0;
    this.#connection.requests += 1;
    this.#inner.onConnect?.(abort);
  }

  onResponseStarted(): void {
    this.#attempt.answered = true;
    this.#inner.onResponseStarted?.();
  }

  onHeaders(statusCode: number, headers: Buffer[], resume: () => void, statusText: string): boolean {
    return this.#inner.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    return this.#inner.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | null): void {
    this.#inner.onComplete?.(trailers);
  }

  onError(error: Error): void {
    this.#inner.onError?.(error);
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: import('node:stream').Duplex): void {
    this.#inner.onUpgrade?.(statusCode, headers, socket);
  }

  onBodySent(chunkSize: number, totalBytesSent: number): void {
    this.#inner.onBodySent?.(chunkSize, totalBytesSent);
  }
}
