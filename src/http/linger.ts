// Lingering close (nginx's lingering_close): a request answered before its
// body was read (a 401, a 413 on the declared length, a 429, a 503…) gets
// `Connection: close`, and the connection is then not closed at once. Closing
// a socket with unread bytes in its receive buffer makes the kernel send a
// reset, and a client still sending its body then gets EPIPE or ECONNRESET
// instead of the answer that was already on its way: the reset can overtake
// it, and discards what the client had not read yet. So the write side is
// half-closed once the answer is out (the client sees its end), the rest of
// the body is read and thrown away, and the connection closes when the body
// ends, or when a bound is reached: the time since the answer, the time
// without a byte, the bytes thrown away. A client that never stops sending
// costs one connection for at most `timeMs`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerBounds {
  /** The longest a connection lingers after its early answer. */
  timeMs: number;
  /** The longest it waits for the next byte of the body. */
  idleTimeoutMs: number;
  /** The most body bytes it reads and throws away. */
  maxBytes: number;
}

/** Sockets lingering now: a second early answer on the same request changes nothing. */
const lingering = new WeakSet<Socket>();

/**
 * Call before an answer's head is written, whenever the answer may come
 * before the request body was read whole: when it was (or there is none),
 * nothing changes and the connection stays keep-alive.
 */
export function lingerAfterEarlyAnswer(req: IncomingMessage, res: ServerResponse, bounds: LingerBounds): void {
  // HTTP/2 needs none: the answer ends its own stream, and the rest of the body is refused on that stream alone.
  if (req.httpVersionMajor === 2) return;
  const socket = req.socket as Socket | null;
  if (req.complete || socket === null || socket.destroyed || lingering.has(socket)) return;
  lingering.add(socket);
  if (!res.headersSent) res.shouldKeepAlive = false;

  let thrownAway = 0;
  let answered = false;
  let bodyDone = false;
  const close = () => {
    clearTimeout(deadline);
    clearTimeout(idle);
    req.off('data', discard);
    socket.destroy();
  };
  // Armed now, not when the answer is out: an answer the client never reads
  // (its receive window full) must not hold the connection beyond the bound either.
  const deadline = setTimeout(close, bounds.timeMs);
  const idle = setTimeout(close, bounds.idleTimeoutMs);
  const discard = (chunk: Buffer) => {
    thrownAway += chunk.length;
    if (thrownAway > bounds.maxBytes) close();
    else idle.refresh();
  };
  req.on('data', discard);
  // Whoever was reading the body (a parser that gave up, a pipe the limit
  // cut) has stopped; a paused body would fill the client's window and stall it.
  req.resume();
  req.once('end', () => {
    bodyDone = true;
    if (answered) close();
  });
  socket.once('close', () => {
    clearTimeout(deadline);
    clearTimeout(idle);
  });
  // Node ends a `Connection: close` exchange with socket.destroySoon() once
  // the answer is written: that is the moment to half-close instead, and
  // keep reading. Own property of this one socket, gone with it.
  socket.destroySoon = () => {
    answered = true;
    if (bodyDone) close();
    else socket.end();
  };
}
