// Per-route request body limits without buffering: a declared length is
// checked before anything is forwarded; a chunked body is counted as it
// streams through and cut off the moment it passes the limit (limits/body-guard.ts).
import type { IncomingMessage } from 'node:http';

export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) return true;
  if (length !== undefined || req.httpVersionMajor !== 2) return false;
  // HTTP/2 has no chunked coding: a body of unknown length is announced by a HEADERS frame without END_STREAM.
  return (req as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream?.endAfterHeaders === false;
}

export function declaredLengthExceeds(req: IncomingMessage, limit: number): boolean {
  const length = req.headers['content-length'];
  return length !== undefined && Number(length) > limit;
}
