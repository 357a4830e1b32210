// Log records over OTLP/HTTP with the OpenTelemetry SDK, when tracing export is on (`tracing.otlpEndpoint`): the
// audit entries, each one record of its own event name, so a collector forwards the trail beside the spans. Off
// otherwise, and then the SDK is never loaded. Records are batched; a collector that does not answer loses them
// (the trail in the store and the log line stay the record of truth).
import type { Config } from '../config/schema.js';
import { GATEHOUSE_VERSION } from './version.js';

/** One flat value a record's attribute holds. */
export type LogAttribute = string | number | boolean | readonly string[];

export interface ExportedLogRecord {
  /** What happened, as the record's event name (an audit entry's kind). */
  eventName: string;
  body: string;
  timeMs: number;
  attributes: Readonly<Record<string, LogAttribute>>;
}

export interface LogExport {
  emit(record: ExportedLogRecord): void;
  /** Sends what is batched and stops. */
  close(): Promise<void>;
}

/** The collector's logs URL: `tracing.otlpLogsEndpoint`, else the traces URL with `/v1/traces` made `/v1/logs`. */
export function otlpLogsUrl(config: Config['tracing']): string | undefined {
  if (config.otlpLogsEndpoint !== undefined) return config.otlpLogsEndpoint;
  if (config.otlpEndpoint === undefined) return undefined;
  return `${config.otlpEndpoint.replace(/\/+$/, '').replace(/\/v1\/traces$/, '')}/v1/logs`;
}

/** The SDK's exporter and processor, loaded on demand; undefined when tracing export is off. */
export async function createLogExport(config: Config['tracing']): Promise<LogExport | undefined> {
  const url = config.otlpEndpoint === undefined ? undefined : otlpLogsUrl(config);
  if (url === undefined) return undefined;
  const [sdk, exporterModule, resources] = await Promise.all([
    import('@opentelemetry/sdk-logs'),
    import('@opentelemetry/exporter-logs-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new sdk.LoggerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': GATEHOUSE_VERSION }),
    processors: [new sdk.BatchLogRecordProcessor({ exporter: new exporterModule.OTLPLogExporter({ url, headers: config.headers }) })],
  });
  const logger = provider.getLogger('gatehouse', GATEHOUSE_VERSION);
  return {
    emit({ eventName, body, timeMs, attributes }) {
      const values: Record<string, string | number | boolean | string[]> = {};
      for (const [name, value] of Object.entries(attributes)) values[name] = typeof value === 'object' ? [...value] : value;
      logger.emit({ eventName, body, timestamp: timeMs, severityText: 'INFO', severityNumber: 9, attributes: values });
    },
    close: () => provider.shutdown(),
  };
}
