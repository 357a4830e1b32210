// `gatehouse start`: run the gateway until SIGTERM/SIGINT, then drain. With
// `server.workers` above one, a primary process forks that many workers that
// share the listeners (node:cluster) and replaces any that dies. The primary
// alone writes the keys file (creating it, or rotating after a change of
// `tokens.algorithm`) before it forks; workers only read it, so they all sign
// with the key they all publish.
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { createGateway } from '../app.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { prepareKeysFile } from '../tokens/key-rotation.js';

/** How long in-flight requests may take to finish after a stop signal. */
export const SHUTDOWN_GRACE_MS = 10_000;
/** A worker that dies is replaced after this pause (a crash loop must not spin). */
export const WORKER_RESTART_DELAY_MS = 1_000;

export function workerCount(config: Config): number {
  return config.server.workers === 'auto' ? availableParallelism() : config.server.workers;
}

export async function runStart(config: Config, configFile: string): Promise<void> {
  const workers = workerCount(config);
  if (workers > 1 && cluster.isPrimary) {
    const logger = createLogger(config).child({ role: 'primary' });
    const { keysFile: file, algorithm, refreshTokenTtlS: retainS } = config.tokens;
    await prepareKeysFile({ file, algorithm, retainS, logger });
    runPrimary(logger, workers);
    return;
  }
  await runWorker(config, configFile);
}

async function runWorker(config: Config, configFile: string): Promise<void> {
  const logger = createLogger(config);
  const gateway = await createGateway(config, { logger, configFile, readOnlyKeys: cluster.isWorker });
  await gateway.listen();

  onStopSignal((signal) => {
    logger.info({ signal }, 'stopping: draining in-flight requests');
    exitAfter(SHUTDOWN_GRACE_MS, logger);
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  });
  // Operators reload routes with SIGHUP too (the file is also watched).
  process.on('SIGHUP', () => void gateway.reloadRoutes());
}

function runPrimary(logger: Logger, count: number): void {
  let stopping = false;
  const fork = (): Worker => cluster.fork();
  for (let i = 0; i < count; i++) fork();
  logger.info({ workers: count }, 'started workers');

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    setTimeout(fork, WORKER_RESTART_DELAY_MS).unref();
  });

  onStopSignal((signal) => {
    stopping = true;
    logger.info({ signal }, 'stopping workers');
    // Workers drain on their own; the primary gives them their grace and a little more.
    exitAfter(SHUTDOWN_GRACE_MS + 2_000, logger);
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  });
  process.on('SIGHUP', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });
}

function onStopSignal(stop: (signal: string) => void): void {
  let stopping = false;
  const once = (signal: string) => {
    if (stopping) return;
    stopping = true;
    stop(signal);
  };
  process.once('SIGTERM', () => once('SIGTERM'));
  process.once('SIGINT', () => once('SIGINT'));
}

function exitAfter(ms: number, logger: Logger): void {
  setTimeout(() => {
    logger.error('graceful stop took too long; exiting');
    process.exit(1);
  }, ms).unref();
}
