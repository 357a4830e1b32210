// Where the µs of one authenticated proxied request go: Gatehouse under load
// with V8's sampling profiler on (`--cpu-prof`), the profile split by where
// each sample's function lives (parse, route, token cache, headers, undici,
// access line, metrics, telemetry…) and printed as CPU µs per request.
//
//   npm run bench -- profile        (BENCH_DURATION_S sets the load, default 10 s;
//                                    BENCH_PROFILE_DIST profiles another build's dist/;
//                                    BENCH_PROFILE_TOKEN=dpop profiles a DPoP-bound token,
//                                    a new EdDSA proof per request, signed ahead, from a Node
//                                    client; =node-bearer a plain token from that client)
//
// The .cpuprofile file is kept (bench/results/) to open in Chrome DevTools or
// speedscope; the summary names the profile it read.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedisServer } from '../test/helpers/redis-server.js';
import { clientKey, dpopLogin, presignedDpopLoad } from './lib/dpop-load.js';
import { loginTokens, startGatehouse } from './lib/gatehouse.js';
import { load } from './lib/load.js';
import { startServer } from './lib/processes.js';
import { summariseProfile, type CpuProfile } from './lib/profile-summary.js';

const say = (line: string) => process.stdout.write(`[profile] ${line}\n`);

export async function runProfileSection(): Promise<void> {
  const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
  const profileDir = mkdtempSync(join(tmpdir(), 'gatehouse-profile-'));
  const redis = await startRedisServer();
  const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
  const gatehouse = await startGatehouse({
    routes: [{ prefix: '/', upstreams: [upstream.url] }],
    extra: { store: { url: redis.url } },
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, '--import', './bench/lib/gc-tally.mjs'],
    env: { GC_TALLY_FILE: join(profileDir, 'gc.json') },
    ...(process.env.BENCH_PROFILE_DIST ? { distDir: process.env.BENCH_PROFILE_DIST } : {}),
  });
  let requests = 0;
  let measured = 0;
  try {
    const url = `${gatehouse.url}/items/1`;
    let drive: (connections: number, durationS: number) => Promise<{ requests: number; rps: number; errors: number }>;
    const token = process.env.BENCH_PROFILE_TOKEN;
    if (token === 'dpop') {
      const key = await clientKey('EdDSA');
      drive = presignedDpopLoad(url, { key, token: await dpopLogin(gatehouse.url, key) });
    } else if (token === 'node-bearer') {
      drive = presignedDpopLoad(url, { token: await dpopLogin(gatehouse.url) });
    } else {
      const headers = { authorization: `Bearer ${(await loginTokens(gatehouse.url)).access_token}` };
      drive = (connections, durationS) => load(url, { connections, durationS, headers });
    }
    const what = token === 'dpop' ? 'a DPoP-bound token' : token === 'node-bearer' ? 'a cached access token from a Node client' : 'a cached access token';
    say('warming up (2 s)');
    requests += (await drive(50, 2)).requests;
    say(`profiling ${durationS} s of proxied GETs at c=50 with ${what}`);
    gatehouse.child.kill('SIGUSR2'); // bench/lib/gc-tally.mjs counts from here
    const result = await drive(50, durationS);
    requests += result.requests;
    measured = result.requests;
    say(`${result.rps.toFixed(0)} req/s, ${result.errors} errors`);
  } finally {
    // The profile is written when the process exits.
    await gatehouse.stop();
    await upstream.stop();
    await redis.close();
  }
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no profile written in ${profileDir}`);
  const kept = join('bench', 'results', `profile-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`);
  mkdirSync(join('bench', 'results'), { recursive: true });
  renameSync(join(profileDir, file), kept);
  const profile = JSON.parse(readFileSync(kept, 'utf8')) as CpuProfile;
  // Every request of the process's life, the login's and the warm-up's included: the profile covers them all.
  process.stdout.write(summariseProfile(profile, requests));
  const tallyFile = join(profileDir, 'gc.json');
  if (existsSync(tallyFile)) {
    const gc = JSON.parse(readFileSync(tallyFile, 'utf8')) as { scavenges: number; promotedBytes: number; majors: number; gcMicros: number };
    // 0.65 KB promoted per request, until a per-session Set and a WeakMap written per request made it 6.5 KB (ee08264).
    const perRequest = (value: number) => (value / Math.max(1, measured)).toFixed(2);
    say(`while profiled: ${gc.scavenges} scavenges, ${gc.majors} major GCs`);
    say(`per request: ${perRequest(gc.promotedBytes)} bytes promoted to the old generation, ${perRequest(gc.gcMicros)} µs of GC`);
  }
  say(`profile kept in ${kept}`);
}
