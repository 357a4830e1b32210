// What the Redis store does around its connections rather than with them:
// deadlines, closing, and reporting failures without flooding the log or
// leaking a password into it.
import { withinDeadline } from '../core/deadline.js';
import type { Logger } from 'pino';
import type { RedisClient } from './redis-client.js';

const QUIT_TIMEOUT_MS = 1_000;
/** A down Redis errors on every reconnect attempt; one warning per interval is enough. */
const CONNECTION_WARNING_INTERVAL_MS = 10_000;

export async function quitOrDisconnect(connection: RedisClient): Promise<void> {
  try {
    // QUIT lets answers already on their way arrive; a dead connection
    // cannot answer it, so it gets cut.
    await withinDeadline(connection.quit(), QUIT_TIMEOUT_MS);
  } catch {
    connection.disconnect();
  }
}

/**
 * Logs a failing connection once per interval (with how many warnings were
 * held back) and its recovery once. Without an 'error' listener an
 * EventEmitter error would crash the process; with it, ioredis keeps
 * reconnecting (retryStrategy) instead.
 */
export function reportConnectionHealth(connection: RedisClient, role: 'commands' | 'subscriber', logger: Logger, closed: () => boolean): void {
  let lastWarningAt = -Infinity;
  let suppressed = 0;
  let failing = false;
  connection.on('error', (error: unknown) => {
    failing = true;
    if (closed()) return;
    const now = Date.now();
    if (now - lastWarningAt < CONNECTION_WARNING_INTERVAL_MS) {
      suppressed += 1;
      return;
    }
    logger.warn(
      { connection: role, error: describeError(error), suppressedWarnings: suppressed },
      'Redis connection failing; state store requests answer 503 until it recovers',
    );
    lastWarningAt = now;
    suppressed = 0;
  });
  connection.on('ready', () => {
    if (!failing) return;
    failing = false;
    logger.info({ connection: role }, 'Redis connection recovered');
  });
}

/**
 * ioredis attaches the failed command to reply errors, and when AUTH fails it
 * rejects every queued command with AUTH's error: its arguments are the
 * password. The cause is kept for the log, so the password must go.
 */
export function withoutCredentials(error: unknown): unknown {
  const command = (error as { command?: { name?: unknown; args?: unknown } } | null)?.command;
  if (command && typeof command.name === 'string' && ['auth', 'hello'].includes(command.name.toLowerCase())) {
    command.args = ['[redacted]'];
  }
  return error;
}

/** Only fields known to be free of secrets: never the error object itself. */
export function describeError(error: unknown): { name?: string; code?: string; message?: string } {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code } = error as NodeJS.ErrnoException;
  return { name: error.name, ...(code === undefined ? {} : { code }), message: error.message };
}
