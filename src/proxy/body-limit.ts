// Per-route request body limits without buffering: a declared length is
// checked before anything is forwarded; a chunked body is counted as it
// streams through and cut off the moment it passes the limit.
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';

export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

export function declaredLengthExceeds(req: IncomingMessage, limit: number): boolean {
  const length = req.headers['content-length'];
  return length !== undefined && Number(length) > limit;
}

/**
 * The request body, counted. When it passes `limit`, the client stops being
 * read and `onExceeded` answers it; the upstream sees its request body end
 * early and is aborted with the client connection.
 */
export function bodyLimiter(req: IncomingMessage, limit: number, onExceeded: () => void): Transform {
  let seen = 0;
  const limiter = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      if (seen > limit) {
        req.unpipe(limiter);
        onExceeded();
        limiter.destroy();
        return;
      }
      callback(null, chunk);
    },
  });
  req.pipe(limiter);
  return limiter;
}
