// `gatehouse start`: run the gateway until SIGTERM/SIGINT, then drain.
import { createGateway } from '../app.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';

/** How long in-flight requests may take to finish after a stop signal. */
export const SHUTDOWN_GRACE_MS = 10_000;

export async function runStart(config: Config, configFile: string): Promise<void> {
  const logger = createLogger(config);
  const gateway = await createGateway(config, { logger, configFile });
  await gateway.listen();

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: draining in-flight requests');
    const timer = setTimeout(() => {
      logger.error('graceful stop took too long; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    timer.unref();
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error while stopping');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  // Operators reload routes with SIGHUP too (the file is also watched).
  process.on('SIGHUP', () => void gateway.reloadRoutes());
}
