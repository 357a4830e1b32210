// A pino destination that keeps every line, so tests can assert what was
// logged and, above all, what was not, and can wait for a line to be written.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/observability/logger.js';

export type LogEntry = Record<string, unknown>;

export interface LogSink {
  logger: Logger;
  /** Every line written so far, raw. */
  text(): string;
  /** Every line written so far, parsed. */
  entries(): LogEntry[];
  /**
   * Resolves with the first line from index `from` on (default: every line,
   * those already written included) that `match` accepts, as soon as it is
   * written. Tests bound the wait with their own timeout.
   */
  next(match: (entry: LogEntry) => boolean, from?: number): Promise<LogEntry>;
}

export function logSink(level: 'trace' | 'debug' | 'info' = 'trace'): LogSink {
  const lines: string[] = [];
  const parsed: LogEntry[] = [];
  const waiters = new Set<(entry: LogEntry, index: number) => void>();
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) {
        lines.push(line);
        const entry = JSON.parse(line) as LogEntry;
        parsed.push(entry);
        for (const waiter of waiters) waiter(entry, parsed.length - 1);
      }
      callback();
    },
  });
  return {
    logger: createLogger({ log: { level } }, stream),
    text: () => lines.join('\n'),
    entries: () => [...parsed],
    next(match, from = 0) {
      const found = parsed.slice(from).find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => {
        const waiter = (entry: LogEntry, index: number) => {
          if (index < from || !match(entry)) return;
          waiters.delete(waiter);
          resolve(entry);
        };
        waiters.add(waiter);
      });
    },
  };
}
