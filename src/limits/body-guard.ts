// What a proxied request body may cost: its size (`bodyLimitBytes`), the time
// it takes to arrive whole (`requestDeadlineMs`) and the rate it must keep
// (`minBodyBytesPerS` over each `bodyRateWindowMs`). A stall timer that each
// byte resets would let a client trickling one byte every few seconds hold an
// upstream connection for ever; a rate measured over a window does not.
//
// One Transform counts the bytes; two timers per body (the deadline and the
// window), nothing per chunk but an addition. A window in which the upstream
// was not reading (its buffer full: backpressure) is not held against the client.
import type { IncomingMessage } from 'node:http';
import { Transform, type TransformCallback } from 'node:stream';
import { gatehouseError, type GatehouseError } from '../core/errors.js';

export interface BodyGuardLimits {
  /** Absent: no size limit. */
  limitBytes: number | undefined;
  deadlineMs: number;
  /** 0: no minimum rate. */
  minBytesPerS: number;
  windowMs: number;
}

/**
 * The request body, guarded. On a violation the client stops being read,
 * `onViolation` answers it (413 or 408), and the guard is destroyed, which
 * ends the upstream request early: the engine aborts it.
 * `startedAt`: when the request began (performance.now()), for the deadline.
 */
export function guardBody(req: IncomingMessage, limits: BodyGuardLimits, startedAt: number, onViolation: (error: GatehouseError) => void): Transform {
  const { limitBytes, minBytesPerS, windowMs } = limits;
  const minPerWindow = (minBytesPerS * windowMs) / 1000;
  let seen = 0;
  let seenAtWindowStart = 0;
  let deadline: NodeJS.Timeout | undefined;
  let window: NodeJS.Timeout | undefined;

  const stop = () => {
    clearTimeout(deadline);
    clearInterval(window);
  };
  const violated = (error: GatehouseError) => {
    stop();
    req.unpipe(guard);
    onViolation(error);
    guard.destroy();
  };

  const guard = new Transform({
    transform(chunk: Buffer, _encoding, callback: TransformCallback) {
      seen += chunk.length;
      if (limitBytes !== undefined && seen > limitBytes) {
        violated(gatehouseError('payload_too_large'));
        return;
      }
      callback(null, chunk);
    },
    flush(callback) {
      stop();
      callback();
    },
  });
  guard.once('close', stop);
  // Arrived whole: what the upstream does with it is not the client's doing.
  req.once('end', stop);

  const slow = () => violated(gatehouseError('request_timeout', { reason: 'the request body did not arrive in time' }));
  deadline = setTimeout(slow, Math.max(0, limits.deadlineMs - (performance.now() - startedAt)));
  if (minPerWindow > 0) {
    window = setInterval(() => {
      const upstreamBehind = guard.readableLength >= guard.readableHighWaterMark;
      if (seen - seenAtWindowStart < minPerWindow && !upstreamBehind) {
        violated(gatehouseError('request_timeout', { reason: 'the request body arrives too slowly' }));
        return;
      }
      seenAtWindowStart = seen;
    }, windowMs);
  }
  req.pipe(guard);
  return guard;
}
