// Per-route request body limits without buffering: a declared length is
// checked before anything is forwarded; a chunked body is counted as it
// streams through and cut off the moment it passes the limit (limits/body-guard.ts).
// Whether there is a body at all is http/request-body.ts's reading.
import type { IncomingMessage } from 'node:http';

export function declaredLengthExceeds(req: IncomingMessage, limit: number): boolean {
  const length = req.headers['content-length'];
  return length !== undefined && Number(length) > limit;
}
