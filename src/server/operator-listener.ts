// A listener for operators and their machines, not for clients: the admin
// listener and the health-only one. Its requests arrive under the same
// deadlines as the public listener's, are not logged one by one, and it has
// its own connection cap, far below the public one's: a flood of the public
// listener never reaches it. Errors answer in the diagnostics format.
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { answerFrameworkError, errorHandler } from '../http/error-handler.js';
import { limitConnections } from '../limits/connection-limits.js';
import { answerUnparsableRequest, arrivalTimeouts } from './arrival.js';
import { recordRoutes } from './route-record.js';

/** A Fastify instance with no routes yet; `name` goes into its log lines as `listener`. */
export async function operatorListener(config: Config, logger: Logger, name: 'admin' | 'health'): Promise<FastifyInstance> {
  const listenerLogger = logger.child({ listener: name });
  const { headersTimeoutMs, requestTimeoutMs } = config.server;
  const app = Fastify({
    loggerInstance: listenerLogger as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: true }),
    frameworkErrors: answerFrameworkError,
    http: arrivalTimeouts(headersTimeoutMs, requestTimeoutMs),
    requestTimeout: requestTimeoutMs,
    clientErrorHandler: answerUnparsableRequest,
  });
  limitConnections(app.server, { maxConnections: config.admin.maxConnections }, listenerLogger);
  recordRoutes(app);
  await app.register(errorHandler);
  return app;
}
