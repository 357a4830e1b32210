// Reads a V8 CPU profile (.cpuprofile) and says where the time went, per
// request: each sample's own function (self time) is put in a bucket by the
// file it lives in, so "undici" is undici's own code and not the socket
// writes it calls (those are "node: net and streams").

export interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }>;
  samples: number[];
  timeDeltas: number[];
}

const ACCESS_LINE_LIBRARIES = /node_modules\/(pino|sonic-boom|fast-redact|pino-std-serializers|fast-json-stringify)\//;

/** First match wins: the bucket a function's file (or V8's pseudo-frame) belongs to. */
const BUCKETS: Array<[name: string, test: (url: string, fn: string) => boolean]> = [
  ['idle (not CPU)', (_url, fn) => fn === '(idle)'],
  ['garbage collection', (_url, fn) => fn === '(garbage collector)'],
  ['V8 and native, unattributed', (url, fn) => fn === '(program)' || (url === '' && fn.startsWith('('))],
  ['node: HTTP server and parser', (url) => /^node:_http_(server|common|incoming|outgoing)/.test(url)],
  ['node: net and streams', (url) => /^node:(net|stream|internal\/streams|internal\/stream_base_commons)/.test(url)],
  ['node: other internals', (url) => url.startsWith('node:')],
  ['undici (forwarding)', (url) => url.includes('node_modules/undici/')],
  ['fastify', (url) => /node_modules\/(fastify|find-my-way|avvio|@fastify)\//.test(url)],
  // The access line's own writer and its serializer count with pino, the histograms of our own with prom-client.
  ['access line (pino)', (url) => ACCESS_LINE_LIBRARIES.test(url) || url.endsWith('/observability/access-line.js')],
  ['metrics (prom-client)', (url) => url.includes('node_modules/prom-client/') || url.endsWith('/observability/bound-histogram.js')],
  ['telemetry (OpenTelemetry)', (url) => url.includes('node_modules/@opentelemetry/')],
  ['token cache (lru-cache)', (url) => url.includes('node_modules/lru-cache/')],
  ['Redis client', (url) => url.includes('node_modules/ioredis/')],
  ['other libraries', (url) => url.includes('node_modules/')],
];

/** Gatehouse's own code is bucketed by its folder (proxy, routing, auth…): the folder names the stage. */
function bucketOf(url: string, fn: string): string {
  for (const [name, test] of BUCKETS) if (test(url, fn)) return name;
  const own = /\/dist\/(?:src\/)?([a-z-]+)\//.exec(url) ?? /\/src\/([a-z-]+)\//.exec(url);
  if (own) return `gatehouse ${own[1]}/`;
  if (/\/dist\/(?:src\/)?[a-z-]+\.js$/.test(url)) return 'gatehouse (top level)';
  return url === '' ? 'native builtins' : 'other';
}

interface Tally {
  micros: number;
  samples: number;
}

function add(map: Map<string, Tally>, key: string, micros: number): void {
  const tally = map.get(key) ?? { micros: 0, samples: 0 };
  tally.micros += micros;
  tally.samples += 1;
  map.set(key, tally);
}

function shortUrl(url: string): string {
  return url.replace(/^.*\/node_modules\//, '').replace(/^.*\/dist\//, 'dist/');
}

const isGatehouse = (url: string) => /\/dist\/(?:src\/)?[a-z-]+(\/[a-z-]+)*\.js$/.test(url) && !url.includes('node_modules');

/**
 * Time spent in each of Gatehouse's own functions and everything they called
 * (inclusive), counted once per sample however deep the recursion: the stages
 * of a request (admission, headers, forwarding, the access line) by name.
 */
function inclusiveOwnTime(profile: CpuProfile): Map<string, Tally> {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const inclusive = new Map<string, Tally>();
  for (const [i, id] of profile.samples.entries()) {
    const micros = profile.timeDeltas[i] ?? 0;
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)!;
      if (!isGatehouse(frame.url)) continue;
      const key = `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      add(inclusive, key, micros);
    }
  }
  return inclusive;
}

/** A plain-text report: CPU µs per request by bucket, then the top functions. */
export function summariseProfile(profile: CpuProfile, requests: number, topFunctions = 25): string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const buckets = new Map<string, Tally>();
  const functions = new Map<string, Tally>();
  for (const [i, id] of profile.samples.entries()) {
    const frame = byId.get(id);
    const micros = profile.timeDeltas[i] ?? 0;
    if (!frame) continue;
    const bucket = bucketOf(frame.url, frame.functionName);
    add(buckets, bucket, micros);
    if (bucket !== 'idle (not CPU)') add(functions, `${frame.functionName || '(anonymous)'} ${shortUrl(frame.url)}:${frame.lineNumber + 1}`, micros);
  }
  const busy = [...buckets].filter(([name]) => name !== 'idle (not CPU)').reduce((sum, [, t]) => sum + t.micros, 0);
  const perRequest = (micros: number) => (micros / Math.max(1, requests)).toFixed(2).padStart(7);
  const share = (micros: number) => `${((100 * micros) / Math.max(1, busy)).toFixed(1).padStart(5)} %`;
  const lines = [
    '',
    `Where the CPU goes: ${requests} requests, ${(busy / 1000).toFixed(0)} ms busy in the profile, ${perRequest(busy).trim()} µs per request (self time)`,
    '| µs/req | share | bucket |',
    '|-------:|------:|--------|',
    ...[...buckets]
      .filter(([name]) => name !== 'idle (not CPU)')
      .sort((a, b) => b[1].micros - a[1].micros)
      .map(([name, t]) => `| ${perRequest(t.micros)} | ${share(t.micros)} | ${name} |`),
    '',
    `Top ${topFunctions} functions by self time`,
    '| µs/req | share | function |',
    '|-------:|------:|----------|',
    ...[...functions]
      .sort((a, b) => b[1].micros - a[1].micros)
      .slice(0, topFunctions)
      .map(([name, t]) => `| ${perRequest(t.micros)} | ${share(t.micros)} | ${name} |`),
    '',
    `Gatehouse's own functions with all they call (inclusive), top ${topFunctions}`,
    '| µs/req | share | function |',
    '|-------:|------:|----------|',
    ...[...inclusiveOwnTime(profile)]
      .sort((a, b) => b[1].micros - a[1].micros)
      .slice(0, topFunctions)
      .map(([name, t]) => `| ${perRequest(t.micros)} | ${share(t.micros)} | ${name} |`),
    '',
  ];
  return lines.join('\n');
}
