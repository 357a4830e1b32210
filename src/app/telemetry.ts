// Stage: what watches every request and every other stage: the log, the
// metrics, and spans over OTLP when configured (otherwise the SDK is never
// loaded); one access line and the request metrics for every request,
// proxied, the gateway's own or WebSocket. Built first, closed last: the last
// spans go out before the process may exit.
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { Metrics } from '../observability/metrics.js';
import { RequestTelemetry } from '../observability/request-telemetry.js';
import { createSpanExport } from '../observability/span-export.js';
import { GATEHOUSE_VERSION } from '../observability/version.js';

export interface TelemetryStage {
  logger: Logger;
  metrics: Metrics;
  telemetry: RequestTelemetry;
  close(): Promise<void>;
}

export async function openTelemetry(config: Config, logger: Logger = createLogger(config)): Promise<TelemetryStage> {
  const metrics = new Metrics({ version: GATEHOUSE_VERSION });
  const spans = await createSpanExport(config.tracing);
  const telemetry = new RequestTelemetry({ logger, metrics, accessLog: config.log.access, spans });
  return {
    logger,
    metrics,
    telemetry,
    async close() {
      // A collector that is gone does not hold the stop.
      await spans?.close().catch((error: unknown) => logger.warn({ err: error }, 'spans could not be sent to the collector'));
    },
  };
}
