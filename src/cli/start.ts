// `gatehouse start`: run the gateway until SIGTERM/SIGINT, then drain for
// `server.shutdownGraceS`: exit 0 when everything in flight finished, 1 when
// the grace ran out and requests were cut (logged with their count). With
// `server.workers` above one, a primary process forks that many workers that
// share the listeners (node:cluster) and replaces any that dies. The primary
// alone writes the keys file (creating it, or rotating after a change of
// `tokens.algorithm`) before it forks; workers only read it, so they all sign
// with the key they all publish.
import cluster, { type Worker } from 'node:cluster';
import { serveClusterMetrics } from '../observability/cluster-metrics.js';
import { availableParallelism } from 'node:os';
import type { Logger } from 'pino';
import { createGateway } from '../app/gateway.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { prepareKeysFile } from '../tokens/key-rotation.js';
import { tuneHeapForServing } from './heap-tuning.js';

/** After the grace: time for the outbox to flush and everything to be released before the process gives up. */
export const SHUTDOWN_MARGIN_MS = 5_000;
/** The exit code of a stop that had to cut requests still in flight (EX_SOFTWARE would mislead; this says "not clean"). */
export const EXIT_REQUESTS_CUT = 1;
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
    // Absent in oidc mode: the provider signs, and no keys file is made.
    if (file !== undefined) await prepareKeysFile({ file, algorithm, retainS, logger });
    runPrimary(logger, workers, config.server.shutdownGraceS * 1000);
    return;
  }
  await runWorker(config, configFile);
}

async function runWorker(config: Config, configFile: string): Promise<void> {
  tuneHeapForServing();
  const logger = createLogger(config);
  const gateway = await createGateway(config, { logger, configFile, readOnlyKeys: cluster.isWorker });
  await gateway.listen();

  onStopSignal((signal) => {
    const graceMs = config.server.shutdownGraceS * 1000;
    logger.info({ signal, graceS: config.server.shutdownGraceS }, 'stopping: draining in-flight requests');
    exitAfter(graceMs + SHUTDOWN_MARGIN_MS, logger);
    gateway.close({ graceMs }).then(
      (cut) => {
        if (cut === 0) {
          logger.info('stopped: every request in flight finished');
          process.exit(0);
        }
        logger.error({ cut }, `stopped: the grace ran out; cut ${cut} connections with requests still in flight`);
        process.exit(EXIT_REQUESTS_CUT);
      },
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  });
  // Operators reload routes with SIGHUP too (the file is also watched).
  process.on('SIGHUP', () => void gateway.reloadRoutes());
}

function runPrimary(logger: Logger, count: number, graceMs: number): void {
  let stopping = false;
  let allClean = true;
  // Scrapes reach one worker; it asks here for the sum over all of them.
  serveClusterMetrics();
  const fork = (): Worker => cluster.fork();
  for (let i = 0; i < count; i++) fork();
  logger.info({ workers: count }, 'started workers');

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (code !== 0) {
        allClean = false;
        logger.error({ pid: worker.process.pid, code, signal }, 'worker did not stop cleanly');
      }
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(allClean ? 0 : EXIT_REQUESTS_CUT);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    // A stop signal during the pause forks no new worker: it would only be killed, or missed.
    setTimeout(() => stopping || fork(), WORKER_RESTART_DELAY_MS).unref();
  });

  onStopSignal((signal) => {
    stopping = true;
    logger.info({ signal }, 'stopping workers');
    // Workers drain on their own; the primary gives them their grace and
    // their margin, and a little more to hear how they ended.
    exitAfter(graceMs + 2 * SHUTDOWN_MARGIN_MS, logger);
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
