// The whole-request deadline of the gateway's own endpoints: a login or
// refresh body that has not arrived whole in time is answered 408 and its
// connection closed, however steadily it trickles. (Node's own
// `requestTimeout` would do this for every request on the listener, proxied
// uploads included; those have their route's deadline and minimum rate
// instead, body-guard.ts.)
import type { IncomingMessage, ServerResponse } from 'node:http';
import { writeErrorResponse } from '../http/error-response.js';
import { gatehouseError } from '../core/errors.js';

/** One timer per request, gone with its response. */
export function armRequestDeadline(req: IncomingMessage, res: ServerResponse, ms: number, requestId: () => string): void {
  const timer = setTimeout(() => {
    // Arrived whole: what happens now is the handler's business.
    if (req.complete || res.destroyed) return;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    writeErrorResponse(res, gatehouseError('request_timeout'), requestId(), true);
    // The rest of the body is not waited for.
    res.once('finish', () => req.destroy());
  }, ms);
  res.once('close', () => clearTimeout(timer));
}
