// The `tracing` section of the config schema: span export over OTLP, and the audit entries as log records.
import { z } from 'zod';
import * as d from './defaults.js';
import { httpUrl } from './schema-primitives.js';

/**
 * Span export over OTLP/HTTP (OpenTelemetry). Off unless `otlpEndpoint` is
 * set: the SDK is not even loaded then. Trace context (W3C traceparent) is
 * read and passed upstream either way.
 */
export const TracingSchema = z.strictObject({
  /** The collector's traces URL, e.g. http://otel-collector:4318/v1/traces. */
  otlpEndpoint: httpUrl.optional(),
  /**
   * The collector's logs URL, where audit entries go as log records while `otlpEndpoint` is set. Default: the
   * traces URL with its `/v1/traces` made `/v1/logs`.
   */
  otlpLogsEndpoint: httpUrl.optional(),
  /** The `service.name` of exported spans. */
  serviceName: z.string().min(1).default(d.DEFAULT_TRACING_SERVICE_NAME),
  /** The share of traces started here that are exported (a continued trace follows its sampled flag). */
  sampleRatio: z.number().min(0).max(1).default(1),
  /** Extra headers for the collector (an API key of a hosted backend). */
  headers: z.record(z.string(), z.string()).default({}),
});
