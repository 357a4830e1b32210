// The alert rules that ship (deploy/prometheus/gatehouse-alerts.yaml and the
// PrometheusRule beside the Kubernetes manifests) hold to what a running
// gateway exposes: a real gateway (TLS listener, an upstream client
// certificate, Redis) is scraped after it refused a token signed by a key it
// does not know and answered 502 for an upstream that is down; every metric a
// rule names, and every series the promtool unit test feeds the rules, must be
// in that scrape with the labels the gateway gives it. Then promtool (Debian's
// prometheus package; PROMTOOL_BIN names another) checks the rules and runs
// their unit test. A missing promtool is an error, never a skip.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { generateKeyPair, SignJWT } from 'jose';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { createTestAuthority, type CertificateFiles, type TestAuthority } from '../helpers/certificates.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RULES = join(ROOT, 'deploy/prometheus/gatehouse-alerts.yaml');
const RULES_TEST = join(ROOT, 'deploy/prometheus/gatehouse-alerts.test.yaml');
const PROMETHEUS_RULE = join(ROOT, 'deploy/kubernetes/components/monitoring/prometheusrule.yaml');
const PROMTOOL = process.env.PROMTOOL_BIN ?? 'promtool';
/** Labels Prometheus adds to every scraped series; the gateway never sets them. */
const TARGET_LABELS = new Set(['instance', 'job']);

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}
interface RulesFile {
  groups: Array<{ name: string; rules: Rule[] }>;
}
interface RulesTest {
  rule_files: string[];
  tests: Array<{
    input_series: Array<{ series: string; values: string }>;
    alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }>;
  }>;
}

/** A scrape: the metric names its TYPE lines declare (a histogram's series names too) and each sample's labels. */
interface Scrape {
  names: Set<string>;
  samples: Map<string, Array<Record<string, string>>>;
}

function parseScrape(text: string): Scrape {
  const names = new Set<string>();
  const samples = new Map<string, Array<Record<string, string>>>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) {
      const [, name, kind] = type as unknown as [string, string, string];
      names.add(name);
      if (kind === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
      if (kind === 'summary') for (const suffix of ['_sum', '_count']) names.add(name + suffix);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const { name, labels } = parseSeries(line.slice(0, line.lastIndexOf(' ')));
    samples.set(name, [...(samples.get(name) ?? []), labels]);
  }
  return { names, samples };
}

/** `name{a="x",b="y"}` as its name and labels (the exposition format's and promtool's series notation alike). */
function parseSeries(series: string): { name: string; labels: Record<string, string> } {
  const brace = series.indexOf('{');
  if (brace === -1) return { name: series.trim(), labels: {} };
  const labels: Record<string, string> = {};
  for (const match of series.slice(brace).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[match[1]!] = match[2]!;
  return { name: series.slice(0, brace).trim(), labels };
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset']);

/** The metric names a PromQL expression reads: what is left once matchers, ranges, groupings, functions, words and numbers are gone. */
function metricNamesOf(expr: string): Set<string> {
  const bare = expr
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, ' ')
    .replace(/\b[a-zA-Z_][a-zA-Z0-9_]*\s*\(/g, '(');
  const names = new Set<string>();
  for (const [token] of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) if (!PROMQL_WORDS.has(token)) names.add(token);
  return names;
}

/** Every `metric{label="value"}` or `metric{label=~"regex"}` matcher in an expression. */
function matchersOf(expr: string): Array<{ metric: string; label: string; op: '=' | '=~'; value: string }> {
  const found: Array<{ metric: string; label: string; op: '=' | '=~'; value: string }> = [];
  for (const [, metric, inside] of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}/g)) {
    for (const [, label, op, value] of inside!.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|=)\s*"([^"]*)"/g)) {
      found.push({ metric: metric!, label: label!, op: op as '=' | '=~', value: value! });
    }
  }
  return found;
}

const notAfterOf = (pem: Buffer) => Date.parse(new X509Certificate(pem).validTo) / 1000;

let ca: TestAuthority;
let listener: CertificateFiles;
let client: CertificateFiles;
let redis: { url: string; close(): Promise<void> };
let gw: TestGateway;
let agent: Agent;
let scrape: Scrape;
let rules: Rule[];

beforeAll(async () => {
  ca = createTestAuthority();
  listener = ca.issue('localhost');
  client = ca.issue('gateway-client', { usage: 'client' });
  redis = await testRedisUrl();
  const down = `https://127.0.0.1:${await freePort()}`;
  const tls = { caFile: ca.certFile, certFile: client.certFile, keyFile: client.keyFile };
  // The files the listener serves and watches: rewritten below to renew the certificate.
  copyFileSync(listener.certFile, join(ca.dir, 'served.crt'));
  copyFileSync(listener.keyFile, join(ca.dir, 'served.key'));
  gw = await startTestGateway({
    config: {
      server: { tls: { certFile: join(ca.dir, 'served.crt'), keyFile: join(ca.dir, 'served.key'), watchIntervalMs: 20 } },
      store: { url: redis.url, keyPrefix: uniquePrefix() },
      routes: [
        { name: 'orders', prefix: '/orders', upstreams: [down], tls },
        { name: 'open', prefix: '/open', auth: 'none', upstreams: [down], tls },
      ],
    },
  });
  agent = new Agent({ connect: { ca: ca.cert } });
  // A token signed with a key no instance published: refused as such.
  const stranger = await generateKeyPair(gw.gateway.keys.algorithm);
  const token = await new SignJWT({ scope: 'orders' })
    .setProtectedHeader({ alg: gw.gateway.keys.algorithm, kid: 'stranger', typ: 'at+jwt' })
    .setSubject('alice')
    .setIssuer(gw.config.tokens.issuer)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(stranger.privateKey);
  const refused = await request(`${gw.url}/orders/1`, { dispatcher: agent, headers: { authorization: `Bearer ${token}` } });
  await refused.body.dump();
  expect(refused.statusCode).toBe(401);
  const failed = await request(`${gw.url}/open/1`, { dispatcher: agent });
  await failed.body.dump();
  expect(failed.statusCode).toBe(502);
  scrape = parseScrape(await (await fetch(`${gw.adminUrl}/metrics`)).text());
  rules = (parse(await readFile(RULES, 'utf8')) as RulesFile).groups.flatMap((group) => group.rules);
}, 60_000);

afterAll(async () => {
  await agent?.close();
  await gw?.close();
  await redis?.close();
  ca?.remove();
});

describe('the shipped alert rules', () => {
  it('name only metrics a running gateway exposes', () => {
    const named = new Set(rules.flatMap((rule) => [...metricNamesOf(rule.expr)]));
    expect(named).toContain('gatehouse_store_up');
    expect(named).toContain('gatehouse_certificate_not_after_timestamp_seconds');
    const missing = [...named].filter((name) => !scrape.names.has(name));
    expect(missing, 'metrics the rules name that /metrics does not expose').toEqual([]);
  });

  it('match label values the gateway gives, where the scrape holds that label', () => {
    const matchers = rules.flatMap((rule) => matchersOf(rule.expr));
    expect(matchers.map((m) => `${m.metric}{${m.label}}`)).toEqual(
      expect.arrayContaining(['gatehouse_auth_refusals_total{reason}', 'gatehouse_http_request_duration_seconds_count{status}']),
    );
    for (const { metric, label, op, value } of matchers) {
      const values = (scrape.samples.get(metric) ?? []).map((labels) => labels[label]).filter((v) => v !== undefined);
      if (values.length === 0) continue;
      const matches = op === '=' ? values.includes(value) : values.some((v) => new RegExp(`^(?:${value})$`).test(v));
      expect(matches, `${metric}{${label}${op}"${value}"} against ${JSON.stringify(values)}`).toBe(true);
    }
  });

  it('are tested on series named and labelled as the gateway exposes them', async () => {
    const unit = parse(await readFile(RULES_TEST, 'utf8')) as RulesTest;
    const series = unit.tests.flatMap((test) => test.input_series.map((input) => parseSeries(input.series)));
    expect(series.length).toBeGreaterThan(0);
    for (const { name, labels } of series) {
      expect(scrape.names.has(name), `${name} is not exposed by the gateway`).toBe(true);
      const seen = scrape.samples.get(name);
      if (seen === undefined) continue;
      const known = new Set(seen.flatMap((sample) => Object.keys(sample)));
      for (const label of Object.keys(labels)) if (!TARGET_LABELS.has(label)) expect(known.has(label), `${name}{${label}}`).toBe(true);
    }
    // What this scrape provoked must be among the samples, so that the label check above ran for them.
    for (const provoked of [
      'gatehouse_store_up',
      'gatehouse_auth_refusals_total',
      'gatehouse_upstream_failures_total',
      'gatehouse_http_request_duration_seconds_count',
    ]) {
      expect(scrape.samples.has(provoked), provoked).toBe(true);
    }
    // Each alert fires in the unit test at least once.
    const firing = new Set(unit.tests.flatMap((test) => test.alert_rule_test.filter((t) => t.exp_alerts.length > 0).map((t) => t.alertname)));
    expect([...firing].sort()).toEqual(rules.map((rule) => rule.alert).sort());
  });

  it('pass promtool check rules and promtool test rules', async () => {
    const run = promisify(execFile);
    const checked = await run(PROMTOOL, ['check', 'rules', RULES]);
    expect(checked.stdout).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    const tested = await run(PROMTOOL, ['test', 'rules', RULES_TEST]);
    expect(tested.stdout).toMatch(/SUCCESS/);
  });

  it('are the same rules in the PrometheusRule of the monitoring component', async () => {
    const file = parse(await readFile(RULES, 'utf8')) as RulesFile;
    const resource = parse(await readFile(PROMETHEUS_RULE, 'utf8')) as { apiVersion: string; kind: string; spec: RulesFile };
    expect(resource).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(resource.spec.groups).toEqual(file.groups);
  });
});

describe('gatehouse_certificate_not_after_timestamp_seconds', () => {
  const gauge = (s: Scrape) => s.samples.get('gatehouse_certificate_not_after_timestamp_seconds') ?? [];

  it("gives the listener's and each upstream client certificate's notAfter, by use and name", async () => {
    const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
    const lines = text.split('\n').filter((line) => line.startsWith('gatehouse_certificate_not_after_timestamp_seconds{'));
    expect(lines.sort()).toEqual(
      [
        `gatehouse_certificate_not_after_timestamp_seconds{use="listener",name="public"} ${notAfterOf(listener.cert)}`,
        `gatehouse_certificate_not_after_timestamp_seconds{use="upstream_client",name="open"} ${notAfterOf(client.cert)}`,
        `gatehouse_certificate_not_after_timestamp_seconds{use="upstream_client",name="orders"} ${notAfterOf(client.cert)}`,
      ].sort(),
    );
    expect(gauge(scrape)).toHaveLength(3);
  });

  it("follows the listener's certificate when it is reloaded", async () => {
    const renewed = ca.issue('localhost-renewed', { expired: true });
    expect(notAfterOf(renewed.cert)).not.toBe(notAfterOf(listener.cert));
    copyFileSync(renewed.certFile, join(ca.dir, 'served.crt'));
    copyFileSync(renewed.keyFile, join(ca.dir, 'served.key'));
    await vi.waitFor(
      async () => {
        const text = await (await fetch(`${gw.adminUrl}/metrics`)).text();
        expect(text).toContain(`gatehouse_certificate_not_after_timestamp_seconds{use="listener",name="public"} ${notAfterOf(renewed.cert)}`);
      },
      { timeout: 10_000, interval: 50 },
    );
  });
});
