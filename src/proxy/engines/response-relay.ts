// One upstream exchange as undici's dispatcher sees it: the response head is
// handed to the proxy's sink (the client's response, or the 202 capture's
// stream), the body written into what the sink returns with undici's own flow
// control, and the end or the failure settled once. What `Pool.stream()` does,
// without what the proxy never uses and pays for on every request there: an
// AsyncResource scope around each callback, an abort signal's listeners, and
// `finished()` listeners on the response (undici's own source marks them as
// too many); undici recommends a handler of one's own for such a hot path.
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable, Writable } from 'node:stream';
import { util, type Dispatcher } from 'undici';
import type { ResponseHead } from '../engine.js';
import { AbandonedError } from '../upstream-errors.js';

export class ResponseRelay implements Dispatcher.DispatchHandler {
  readonly #sink: (head: ResponseHead) => Writable;
  readonly #body: Readable | null;
  #abortUpstream: ((reason?: Error) => void) | undefined;
  /** Why the exchange was given up before undici connected it (aborted as soon as it does). */
  #abortedFor: Error | undefined;
  #writable: Writable | undefined;
  #resolve!: () => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  /** Settles when the response body has been written whole, or the exchange failed. */
  readonly done: Promise<void>;

  constructor(sink: (head: ResponseHead) => Writable, body: Readable | null) {
    this.#sink = sink;
    this.#body = body;
    this.done = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    // A request body that fails fails the exchange, whether or not undici is reading it yet.
    body?.once('error', (error) => this.abort(error));
  }

  /** Gives the exchange up (the client left, its session ended, its body stalled): undici closes the upstream side. */
  abort(reason: Error): void {
    if (this.#settled) return;
    if (this.#abortUpstream === undefined) this.#abortedFor ??= reason;
    else this.#abortUpstream(reason);
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.#abortedFor !== undefined) {
      abort(this.#abortedFor);
      return;
    }
    this.#abortUpstream = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx answers (100 Continue, 103 Early Hints) are not the response.
    if (statusCode < 200) return true;
    const writable = this.#sink({ statusCode, headers: util.parseHeaders(rawHeaders) as IncomingHttpHeaders });
    // The client left while the head was on its way: nothing would ever drain (undici aborts on a throw).
    if (writable.destroyed) throw new AbandonedError('the response was closed before its head arrived');
    this.#writable = writable;
    writable.on('drain', resume);
    return writable.writableNeedDrain !== true;
  }

  onData(chunk: Buffer): boolean {
    return this.#writable === undefined ? true : this.#writable.write(chunk);
  }

  onComplete(): void {
    this.#writable?.end();
    this.#settle();
  }

  onError(error: Error): void {
    // A body already begun cannot be answered otherwise: the sink ends in error (the client's connection is reset).
    if (this.#writable !== undefined && !this.#writable.destroyed) this.#writable.destroy(error);
    if (this.#body !== null && !this.#body.destroyed) this.#body.destroy(error);
    this.#settle(error);
  }

  #settle(error?: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    if (error === undefined) this.#resolve();
    else this.#reject(error);
  }
}
