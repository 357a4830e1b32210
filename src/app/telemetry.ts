// Stage: what watches every request and every other stage: the log, the
// metrics, and spans (and the audit entries as log records) over OTLP when
// configured (otherwise the SDK is never loaded); one access line and the request metrics for every request,
// proxied, the gateway's own or WebSocket. Built first, closed last: the last
// spans go out before the process may exit.
import type { Logger } from 'pino';
import { auditAttributes } from '../audit/entry-attributes.js';
import { AUDIT_LOG_MESSAGE } from '../audit/appender.js';
import type { AuditEntry } from '../audit/entry.js';
import type { Config } from '../config/schema.js';
import { createLogger } from '../observability/logger.js';
import { Metrics } from '../observability/metrics.js';
import { RequestTelemetry } from '../observability/request-telemetry.js';
import { createLogExport } from '../observability/log-export.js';
import { createSpanExport } from '../observability/span-export.js';
import { GATEHOUSE_VERSION } from '../observability/version.js';

export interface TelemetryStage {
  logger: Logger;
  metrics: Metrics;
  telemetry: RequestTelemetry;
  /** Each audit entry as one OTLP log record of its kind; undefined when tracing export is off. */
  exportAudit: ((entry: AuditEntry) => void) | undefined;
  close(): Promise<void>;
}

export async function openTelemetry(config: Config, logger: Logger = createLogger(config)): Promise<TelemetryStage> {
  const metrics = new Metrics({ version: GATEHOUSE_VERSION });
  const [spans, logs] = await Promise.all([createSpanExport(config.tracing), createLogExport(config.tracing)]);
  const telemetry = new RequestTelemetry({ logger, metrics, accessLog: config.log.access, spans });
  return {
    logger,
    metrics,
    telemetry,
    exportAudit:
      logs && ((entry) => logs.emit({ eventName: entry.kind, body: AUDIT_LOG_MESSAGE, timeMs: Date.parse(entry.at), attributes: auditAttributes(entry) })),
    async close() {
      // A collector that is gone does not hold the stop.
      await spans?.close().catch((error: unknown) => logger.warn({ err: error }, 'spans could not be sent to the collector'));
      await logs?.close().catch((error: unknown) => logger.warn({ err: error }, 'audit log records could not be sent to the collector'));
    },
  };
}
