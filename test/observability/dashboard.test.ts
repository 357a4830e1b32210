// The Grafana dashboard in examples/ is only as good as its queries: every
// metric any panel names must be one that /metrics exposes, by its exact
// name (a histogram's _bucket, _count and _sum included).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';

interface Panel {
  title: string;
  type: string;
  targets?: Array<{ expr: string }>;
}

const dashboard = JSON.parse(readFileSync(new URL('../../examples/grafana-dashboard.json', import.meta.url), 'utf8')) as { panels: Panel[] };
const HISTOGRAM_SERIES = ['_bucket', '_count', '_sum'];
/** PromQL words that look like metric names but are functions, aggregations or keywords. */
const PROMQL_WORDS = new Set(['sum', 'rate', 'increase', 'histogram_quantile', 'by', 'min', 'max', 'le']);

/** Metric names in a PromQL expression: identifiers outside label matchers and strings, not followed by `(`. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, '')
    .replace(/"[^"]*"/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/by \([^)]*\)/g, '');
  return [...bare.matchAll(/([a-z_:][a-z0-9_:]*)\s*(\()?/g)].filter((m) => m[2] === undefined && !PROMQL_WORDS.has(m[1]!)).map((m) => m[1]!);
}

let gw: TestGateway;
let exposed: Set<string>;

beforeAll(async () => {
  gw = await startTestGateway();
  await login(gw.url, 'alice', 'alice-password-1');
  const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
  exposed = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    exposed.add(name!);
    if (type === 'histogram' || type === 'summary') for (const suffix of HISTOGRAM_SERIES) exposed.add(`${name}${suffix}`);
  }
});
afterAll(async () => gw?.close());

describe('the Grafana dashboard', () => {
  const queries = dashboard.panels.flatMap((panel) => (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })));

  it('covers traffic, errors, latency, auth, throttling, upstreams and the async backlog', () => {
    const all = queries.map((q) => q.expr).join('\n');
    for (const family of [
      'gatehouse_http_request_duration_seconds_count',
      'gatehouse_http_request_duration_seconds_bucket',
      'gatehouse_auth_refusals_total',
      'gatehouse_throttled_total',
      'gatehouse_upstream_failures_total',
      'gatehouse_outbox_records',
    ]) {
      expect(all).toContain(family);
    }
  });

  it('names only metrics that /metrics exposes', () => {
    expect(queries.length).toBeGreaterThan(10);
    for (const { panel, expr } of queries) {
      const names = metricNames(expr);
      expect(names.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of names) expect(exposed.has(name), `${panel}: ${name} is not exposed`).toBe(true);
    }
  });

  it('finds a misspelt metric (the check itself can fail)', () => {
    expect(metricNames('sum(rate(gatehouse_http_requests_total[5m]))')).toEqual(['gatehouse_http_requests_total']);
    expect(exposed.has('gatehouse_http_requests_total')).toBe(false);
  });
});
