// Whether a request carries a body, on HTTP/1.1 and HTTP/2 alike: the one
// reading that the proxy (whether it may retry, whether an early answer must
// close the connection) and the front door's refusals share.
import type { IncomingMessage } from 'node:http';

/** Whether `req` has a body: a non-zero Content-Length, a Transfer-Encoding, or an HTTP/2 stream still open after its headers. */
export function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')) return true;
  if (length !== undefined || req.httpVersionMajor !== 2) return false;
  // HTTP/2 has no chunked coding: a body of unknown length is announced by a HEADERS frame without END_STREAM.
  return (req as IncomingMessage & { stream?: { endAfterHeaders?: boolean } }).stream?.endAfterHeaders === false;
}
