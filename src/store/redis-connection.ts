// What the Redis store does around its connections rather than with them:
// deadlines, closing, and reporting failures without flooding the log or
// leaking a password into it.
import { withinDeadline } from '../core/deadline.js';
import type { Logger } from 'pino';
import type { RedisClient } from './redis-client.js';
import { refusalOf, watchGreetings, type Refusal } from './redis-refusals.js';

const QUIT_TIMEOUT_MS = 1_000;
/** A down Redis errors on every reconnect attempt; one warning per interval is enough. */
const CONNECTION_WARNING_INTERVAL_MS = 10_000;

export { withinDeadline };

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
 * held back) and its recovery once. A Redis that refuses this client with an
 * error reply (redis-refusals.ts) is named with that reply and what to
 * change, at once and in each later warning: its EPIPEs and timeouts only
 * follow from it. Without an 'error' listener an EventEmitter error would
 * crash the process; with it, ioredis keeps reconnecting (retryStrategy).
 */
export function reportConnectionHealth(connection: RedisClient, role: 'commands' | 'subscriber' | 'writes', logger: Logger, closed: () => boolean): void {
  let lastWarningAt = -Infinity;
  let suppressed = 0;
  let failing = false;
  let refusal: Refusal | undefined;
  const warn = (error: unknown) => {
    logger.warn(
      { connection: role, error: describeError(error), suppressedWarnings: suppressed, ...(refusal && { refusal: refusal.reply, fix: refusal.fix }) },
      refusal
        ? `Redis refuses the connection: ${refusal.reply} ${refusal.fix}; state store requests answer 503 until it accepts`
        : 'Redis connection failing; state store requests answer 503 until it recovers',
    );
    lastWarningAt = Date.now();
    suppressed = 0;
  };
  /** `seen`: the failure is a refusal (an error reply, or the greeting of a new connection). */
  const failed = (error: unknown, seen = error instanceof Error ? refusalOf(error.message) : undefined) => {
    failing = true;
    const news = seen !== undefined && seen.reply !== refusal?.reply;
    refusal = seen ?? refusal;
    if (closed()) return;
    if (news || Date.now() - lastWarningAt >= CONNECTION_WARNING_INTERVAL_MS) warn(error);
    else suppressed += 1;
  };
  watchGreetings(connection, (seen) => failed(new Error(seen.reply), seen));
  connection.on('error', (error: unknown) => failed(error));
  connection.on('ready', () => {
    refusal = undefined;
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

/**
 * Resolves only when a writable master answers: during a failover the old
 * master still answers PING (and even takes writes, which are lost when it
 * is demoted), so readiness asks for its role, and a Cluster for its state
 * (every slot served).
 */
export async function answersAsWritableMaster(client: RedisClient): Promise<void> {
  if (client.isCluster) {
    const info = String(await client.cluster('INFO'));
    if (!info.includes('cluster_state:ok')) throw new Error('the Redis Cluster does not serve every slot (cluster_state is not ok)');
    return;
  }
  const [role] = (await client.role()) as unknown[];
  if (role !== 'master') throw new Error(`Redis answers as a ${String(role)}: no writable master is known`);
}

/** Only fields known to be free of secrets: never the error object itself. */
export function describeError(error: unknown): { name?: string; code?: string; message?: string } {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code } = error as NodeJS.ErrnoException;
  return { name: error.name, ...(code === undefined ? {} : { code }), message: error.message };
}
