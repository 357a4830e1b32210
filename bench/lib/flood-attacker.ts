// The attacker of the flood bench (bench/flood.ts), a process of its own that
// the bench pins to the other CPU than Gatehouse's, so its own CPU is not
// counted as the gateway's slowdown. Closed loop: each of `concurrency`
// workers sends its next request as soon as the last one is answered, from
// its own loopback address (127.0.0.2 and up: all of 127.0.0.0/8 is local on
// Linux), bounded by `seconds` and `maxRequests`. Prints a progress line a
// second on stderr and its totals as one JSON line on stdout at the end.
//
//   FLOOD_ATTACK='{"kind":"logins","url":"http://127.0.0.1:8080","addresses":64,"concurrency":64,"seconds":12,"maxRequests":500000}'
//   kinds: logins (random usernames, 1 KB passwords), tokens (distinct garbage bearer tokens on `path`)
import { randomBytes } from 'node:crypto';
import { Agent, request } from 'node:http';

export interface AttackSettings {
  kind: 'logins' | 'tokens';
  url: string;
  /** Loopback source addresses, 127.0.0.2 onwards. */
  addresses: number;
  concurrency: number;
  seconds: number;
  maxRequests: number;
  /** tokens: the proxied path, and the JOSE header (base64url) of the gateway's tokens, so each garbage token costs a signature check. */
  path?: string;
  tokenHeader?: string;
}

export interface AttackTotals {
  requests: number;
  rps: number;
  statuses: Record<string, number>;
}

const settings = JSON.parse(process.env.FLOOD_ATTACK ?? '{}') as AttackSettings;
const target = new URL(settings.url);
const sourceOf = (i: number) => `127.0.0.${2 + (i % settings.addresses)}`;
const agents = new Map<string, Agent>();
const agentFor = (source: string) => {
  let agent = agents.get(source);
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, maxSockets: settings.concurrency });
    agents.set(source, agent);
  }
  return agent;
};

const statuses: Record<string, number> = {};
let sent = 0;
const started = performance.now();
const deadline = started + settings.seconds * 1000;

function once(source: string): Promise<void> {
  let path: string;
  let method: string;
  let body: string | undefined;
  const headers: Record<string, string> = {};
  if (settings.kind === 'logins') {
    method = 'POST';
    path = '/api/v1/auth/login';
    body = JSON.stringify({ username: `u-${randomBytes(6).toString('hex')}`, password: randomBytes(768).toString('base64') });
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  } else {
    method = 'GET';
    path = settings.path ?? '/';
    const payload = randomBytes(96).toString('base64url');
    headers.authorization = `Bearer ${settings.tokenHeader}.${payload}.${randomBytes(64).toString('base64url')}`;
  }
  return new Promise((resolve) => {
    const req = request({ host: target.hostname, port: target.port, path, method, headers, agent: agentFor(source), localAddress: source }, (res) => {
      res.resume();
      res.once('end', () => {
        statuses[res.statusCode ?? 0] = (statuses[res.statusCode ?? 0] ?? 0) + 1;
        resolve();
      });
    });
    req.once('error', (error: NodeJS.ErrnoException) => {
      statuses[error.code ?? 'error'] = (statuses[error.code ?? 'error'] ?? 0) + 1;
      resolve();
    });
    req.end(body);
  });
}

async function worker(i: number): Promise<void> {
  const source = sourceOf(i);
  while (performance.now() < deadline && sent < settings.maxRequests) {
    sent += 1;
    await once(source);
  }
}

const progress = setInterval(() => {
  const s = (performance.now() - started) / 1000;
  process.stderr.write(`[attacker]   ${s.toFixed(0)} s: ${sent} sent (${(sent / s).toFixed(0)}/s) ${JSON.stringify(statuses)}\n`);
}, 2000);
await Promise.all(Array.from({ length: settings.concurrency }, (_, i) => worker(i)));
clearInterval(progress);
for (const agent of agents.values()) agent.destroy();
const totals: AttackTotals = { requests: sent, rps: sent / ((performance.now() - started) / 1000), statuses };
process.stdout.write(`${JSON.stringify(totals)}\n`);
