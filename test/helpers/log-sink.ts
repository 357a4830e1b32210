// A pino destination that keeps every line, so tests can assert what was
// logged and, above all, what was not.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/observability/logger.js';

export interface LogSink {
  logger: Logger;
  /** Every line written so far, raw. */
  text(): string;
  /** Every line written so far, parsed. */
  entries(): Array<Record<string, unknown>>;
}

export function logSink(level: 'trace' | 'debug' | 'info' = 'trace'): LogSink {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      callback();
    },
  });
  return {
    logger: createLogger({ log: { level } }, stream),
    text: () => lines.join('\n'),
    entries: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}
