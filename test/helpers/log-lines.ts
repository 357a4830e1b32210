// The JSON log lines a child process writes to a stream, to wait on: a test
// waits for the line that says a thing happened, not for a while.
import { createInterface } from 'node:readline';

export type LogLine = Record<string, unknown> & { msg?: string };

export interface LogLines {
  readonly lines: readonly LogLine[];
  /** Resolves with the `count`-th line (counted from the start) that matches; rejects if the stream ends first. */
  next(match: (line: LogLine) => boolean, count?: number): Promise<LogLine>;
}

export function followLogLines(stream: NodeJS.ReadableStream): LogLines {
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  let ended = false;
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  reader.on('line', (text) => {
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      lines.push({ msg: text }); // not JSON: kept as it is
    }
    wake();
  });
  reader.on('close', () => {
    ended = true;
    wake();
  });
  return {
    lines,
    next(match, count = 1) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = lines.filter(match);
          if (found.length >= count) {
            waiters.delete(check);
            resolve(found[count - 1]!);
          } else if (ended) {
            waiters.delete(check);
            reject(new Error(`the log ended after ${found.length} of ${count} matching lines`));
          }
        };
        waiters.add(check);
        check();
      });
    },
  };
}
