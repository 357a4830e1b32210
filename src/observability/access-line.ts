// The access line: one per request, so its cost is paid on every one. Its
// fields are fixed, so they are serialised by a schema compiled once
// (fast-json-stringify, Fastify's serializer) rather than by pino's walk over
// an object's keys, which measured about three times dearer. The line is
// pino's own in every other respect: its level, time and bindings come from
// the logger, it goes to the logger's destination in turn with every other
// line, and a test holds it to the text `logger.info(fields, 'request')`
// writes. Its values come from the gateway, the URL already masked
// (redactUrl), so no redaction pass runs over it.
import fastJson from 'fast-json-stringify';
import { pino, type Logger } from 'pino';
import type { RequestSummary } from './request-summary.js';

/** The line's fields after pino's own, in this order; an undefined one is left out, as pino leaves it out. */
export interface AccessFields {
  reqId: string;
  traceId: string;
  kind: RequestSummary['kind'];
  event?: RequestSummary['event'];
  address: string | undefined;
  method: string;
  protocol: string | undefined;
  route: string;
  url: string;
  upstream: string | undefined;
  status: number;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  upstreamMs: number | undefined;
  sub: string | undefined;
  userAgent: string | undefined;
  completed: boolean;
}

const text = { type: 'string' } as const;
const number = { type: 'number' } as const;
const serializeFields = fastJson({
  type: 'object',
  properties: {
    reqId: text,
    traceId: text,
    kind: text,
    event: text,
    address: text,
    method: text,
    protocol: text,
    route: text,
    url: text,
    upstream: text,
    status: number,
    bytesIn: number,
    bytesOut: number,
    durationMs: number,
    upstreamMs: number,
    sub: text,
    userAgent: text,
    completed: { type: 'boolean' },
  },
});

/** The access line's message, as `logger.info(fields, MESSAGE)` would give it. */
export const ACCESS_MESSAGE = 'request';

const { lsCacheSym, timeSym, chindingsSym, endSym, messageKeySym, streamSym } = pino.symbols;

export type AccessLine = (summary: RequestSummary) => void;

/**
 * Writes a summary's access line at info through `logger`, as its own `info`
 * would. The parts of the line around the fields are the logger's own (read
 * through `pino.symbols`), fixed once it exists: its level's prefix, its time
 * function, its bindings and its line end.
 */
export function accessLineWriter(logger: Logger): AccessLine {
  const part = <T>(symbol: symbol): T => (logger as unknown as Record<symbol, T>)[symbol]!;
  const head = part<Record<number, string>>(lsCacheSym)[logger.levels.values.info!]!;
  const time = part<() => string>(timeSym);
  const bindings = part<string>(chindingsSym);
  const tail = `,${JSON.stringify(part<string>(messageKeySym))}:${JSON.stringify(ACCESS_MESSAGE)}${part<string>(endSym)}`;
  const stream = part<{ write(line: string): unknown }>(streamSym);
  return (summary) => {
    if (!logger.isLevelEnabled('info')) return;
    const fields = serializeFields(accessFields(summary));
    // `{"reqId":…}` without its braces, between the logger's head and tail.
    stream.write(head + time() + bindings + (fields.length > 2 ? `,${fields.slice(1, -1)}` : '') + tail);
  };
}

export function accessFields(summary: RequestSummary): AccessFields {
  return {
    reqId: summary.requestId,
    traceId: summary.trace.traceId,
    kind: summary.kind,
    event: summary.event,
    address: summary.clientAddress,
    method: summary.method,
    protocol: summary.protocol,
    route: summary.route,
    url: summary.url,
    upstream: summary.upstream,
    status: summary.status,
    bytesIn: summary.bytesIn,
    bytesOut: summary.bytesOut,
    durationMs: round(summary.durationMs),
    upstreamMs: summary.upstreamMs === undefined ? undefined : round(summary.upstreamMs),
    sub: summary.subject,
    userAgent: summary.userAgent,
    completed: summary.completed,
  };
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
