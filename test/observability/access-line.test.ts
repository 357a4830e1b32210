// The access line is serialised by a compiled schema and written past pino's
// `info`, for speed. A reader of the log must not tell: for any request
// summary, the line is the one `logger.info(fields, 'request')` writes (same
// fields, same order, same escaping), and it follows the logger's level.
import fc from 'fast-check';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ACCESS_MESSAGE, accessFields, accessLineWriter } from '../../src/observability/access-line.js';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import type { RequestSummary } from '../../src/observability/request-summary.js';

function capture(level: 'info' | 'warn' = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(chunk.toString('utf8'));
      callback();
    },
  });
  return { logger: createLogger({ log: { level } }, stream), lines };
}

/** Strings as clients send them and worse: quotes, backslashes, control characters, non-ASCII. */
const anyText = fc.string({ unit: 'binary', maxLength: 60 });
const optional = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined });
const finite = fc.double({ min: 0, max: 1e7, noNaN: true });
const summary: fc.Arbitrary<RequestSummary> = fc.record({
  kind: fc.constantFrom('proxy', 'gateway', 'websocket'),
  requestId: anyText,
  trace: fc.record({
    traceId: fc.stringMatching(/^[0-9a-f]{32}$/),
    spanId: fc.stringMatching(/^[0-9a-f]{16}$/),
    parentSpanId: optional(fc.stringMatching(/^[0-9a-f]{16}$/)),
    flags: fc.constantFrom('00', '01'),
  }),
  clientAddress: optional(anyText),
  method: anyText,
  route: anyText,
  url: anyText,
  status: fc.integer({ min: 100, max: 599 }),
  bytesIn: fc.nat(),
  bytesOut: fc.nat(),
  durationMs: finite,
  upstream: optional(anyText),
  upstreamMs: optional(finite),
  subject: optional(anyText),
  userAgent: optional(anyText),
  protocol: optional(fc.constantFrom('1.1', '2.0')),
  event: optional(fc.constantFrom('open' as const, 'close' as const)),
  completed: fc.boolean(),
});

/** A line with its time replaced, so two lines written a millisecond apart compare. */
const timeless = (line: string) => line.replace(/,"time":\d+,/, ',"time":0,');

describe('the access line', () => {
  it("is the very line pino's info writes for the same fields, for any summary", () => {
    const ours = capture();
    const theirs = capture();
    const write = accessLineWriter(ours.logger);
    fc.assert(
      fc.property(summary, (s) => {
        write(s);
        theirs.logger.info(accessFields(s), ACCESS_MESSAGE);
        const [line, expected] = [ours.lines.pop()!, theirs.lines.pop()!];
        expect(timeless(line)).toBe(timeless(expected));
        expect(JSON.parse(line)).toMatchObject({ level: 30, msg: 'request', service: 'gatehouse' });
      }),
      { numRuns: 500 },
    );
  });

  it("carries the logger's bindings, and is not written when info is off", () => {
    const child = capture();
    const write = accessLineWriter(child.logger.child({ listener: 'public' }));
    const s = fc.sample(summary, { numRuns: 1, seed: 7 })[0]!;
    write(s);
    expect(JSON.parse(child.lines.pop()!)).toMatchObject({ service: 'gatehouse', listener: 'public', reqId: s.requestId });
    const quiet = capture('warn');
    accessLineWriter(quiet.logger)(s);
    expect(quiet.lines).toEqual([]);
  });
});
