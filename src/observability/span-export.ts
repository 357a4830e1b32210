// Spans over OTLP/HTTP with the OpenTelemetry SDK, when `tracing.otlpEndpoint`
// is set. Each request becomes one server span, recorded when it ends, with
// the ids the gateway already chose (trace-context.ts): the span id the
// upstream was told is its parent is the id exported, so a backend's spans
// hang under the gateway's in the trace view. Off by default, and then the
// SDK is never loaded: the hot path pays one `undefined` check.
import type { Span, Tracer } from '@opentelemetry/api';
import type { Config } from '../config/schema.js';
import type { RequestSummary } from './request-summary.js';
import { GATEHOUSE_VERSION } from './version.js';

export interface SpanExport {
  record(summary: RequestSummary, startedAtMs: number): void;
  /** Sends what is batched and stops. */
  close(): Promise<void>;
}

/** The SDK's exporter and processor, loaded on demand; undefined when tracing is off. */
export async function createSpanExport(config: Config['tracing']): Promise<SpanExport | undefined> {
  if (config.otlpEndpoint === undefined) return undefined;
  const [api, sdk, exporterModule, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  // The SDK asks for ids as it starts a span; these are the ones the gateway already sent upstream.
  let nextTraceId = '';
  let nextSpanId = '';
  const provider = new sdk.BasicTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': GATEHOUSE_VERSION }),
    sampler: new sdk.ParentBasedSampler({ root: new sdk.TraceIdRatioBasedSampler(config.sampleRatio) }),
    idGenerator: { generateTraceId: () => nextTraceId, generateSpanId: () => nextSpanId },
    spanProcessors: [new sdk.BatchSpanProcessor(new exporterModule.OTLPTraceExporter({ url: config.otlpEndpoint, headers: config.headers }))],
  });
  const tracer: Tracer = provider.getTracer('gatehouse', GATEHOUSE_VERSION);

  return {
    record(summary, startedAtMs) {
      const { trace } = summary;
      const parent =
        trace.parentSpanId === undefined
          ? api.ROOT_CONTEXT
          : api.trace.setSpanContext(api.ROOT_CONTEXT, {
              traceId: trace.traceId,
              spanId: trace.parentSpanId,
              traceFlags: Number.parseInt(trace.flags, 16) & api.TraceFlags.SAMPLED,
              isRemote: true,
            });
      nextTraceId = trace.traceId;
      nextSpanId = trace.spanId;
      const span: Span = tracer.startSpan(
        `${summary.method} ${summary.route}`,
        {
          kind: api.SpanKind.SERVER,
          startTime: startedAtMs,
          attributes: {
            'http.request.method': summary.method,
            'http.route': summary.route,
            'http.response.status_code': summary.status,
            'url.path': summary.url,
            'gatehouse.request_id': summary.requestId,
            'gatehouse.kind': summary.kind,
            ...(summary.upstream !== undefined && { 'server.address': summary.upstream }),
            ...(summary.subject !== undefined && { 'enduser.id': summary.subject }),
          },
        },
        parent,
      );
      if (summary.status >= 500) span.setStatus({ code: api.SpanStatusCode.ERROR });
      span.end(startedAtMs + summary.durationMs);
    },
    close: () => provider.shutdown(),
  };
}
