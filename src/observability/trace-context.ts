// W3C Trace Context (https://www.w3.org/TR/trace-context/): the gateway is one
// hop of a trace. A valid `traceparent` from the client continues its trace;
// otherwise the gateway starts one. Either way the request gets a span id of
// its own, and the upstream is told that span is its parent. `tracestate`
// travels on unchanged (the gateway adds no vendor entry of its own).
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const TRACEPARENT_HEADER = 'traceparent';

/** version 00: `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`; a later version may add fields after a `-`. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO_TRACE = '0'.repeat(32);
const ALL_ZERO_SPAN = '0'.repeat(16);
/** Sampled: the gateway records what it starts (exporting, when on, samples by its own ratio). */
const SAMPLED = '01';

export interface TraceContext {
  traceId: string;
  /** This hop's span: the parent the upstream is given. */
  spanId: string;
  /** The client's span, when it sent a valid traceparent. */
  parentSpanId: string | undefined;
  flags: string;
}

/** Random bytes drawn in batches: one fill serves a few hundred ids (each request needs one or two). */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let poolOffset = POOL_BYTES;

/** `length` random hex characters, from the CSPRNG (ids must not be guessable from earlier ones). */
function randomHex(length: 16 | 32): string {
  const bytes = length / 2;
  if (poolOffset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

/** The request's trace: continued from a valid `traceparent`, or new. */
export function traceContext(traceparent: string | string[] | undefined): TraceContext {
  if (typeof traceparent === 'string') {
    const match = TRACEPARENT.exec(traceparent.trim());
    if (match !== null) {
      const [, version, traceId, parentSpanId, flags, rest] = match as unknown as [string, string, string, string, string, string | undefined];
      // Version ff is invalid; version 00 has exactly four fields; all-zero ids are invalid.
      const valid = version !== 'ff' && !(version === '00' && rest !== undefined) && traceId !== ALL_ZERO_TRACE && parentSpanId !== ALL_ZERO_SPAN;
      if (valid) return { traceId, spanId: randomHex(16), parentSpanId, flags };
    }
  }
  return { traceId: randomHex(32), spanId: randomHex(16), parentSpanId: undefined, flags: SAMPLED };
}

/** The `traceparent` the upstream receives: same trace, this hop as parent. */
export function upstreamTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;
}

/** Each request's trace, worked out once from its headers whoever asks first (a log line, the proxy, an audit line). */
const traces = new WeakMap<IncomingMessage, TraceContext>();

export function traceOf(req: IncomingMessage): TraceContext {
  let trace = traces.get(req);
  if (trace === undefined) {
    trace = traceContext(req.headers[TRACEPARENT_HEADER]);
    traces.set(req, trace);
  }
  return trace;
}
