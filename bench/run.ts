// `npm run bench [-- section …]`: builds Gatehouse, starts everything it
// needs on loopback, and measures it against its baselines in the same run.
// Sections, all by default: auth, floor, proxy, engines, async, memory,
// credentials, json, paths, flood, limits, quotas, authz, dpop, oidc, providers, session-end, tls,
// assertion, upstream-tls. Only when named: builds (two builds in one run, with
// BENCH_BASELINE_REF) and profile (a CPU profile of the hot path).
// BENCH_DURATION_S and BENCH_ROUNDS shorten a run (defaults: 10 s, 3 rounds);
// BENCH_FIXED_RATE sets the fixed-rate latency run (default 1000 req/s).
import { execFileSync } from 'node:child_process';
import { runAssertionSection } from './assertion.js';
import { runAsyncSection } from './async.js';
import { runAuthSection } from './auth.js';
import { runAuthzSection } from './authz.js';
import { runBuildsSection } from './builds.js';
import { runDpopSection } from './dpop.js';
import { buildGatehouse } from './lib/gatehouse.js';
import { runEnginesSection } from './engines.js';
import { runFloodSection } from './flood.js';
import { runFloorSection } from './floor.js';
import { runJsonBodySection } from './json-body.js';
import { runLimitsSection } from './limits.js';
import { runMemorySection } from './memory.js';
import { runOidcSection } from './oidc.js';
import { runProvidersSection } from './providers.js';
import { runPathsSection } from './paths.js';
import { runProfileSection } from './profile.js';
import { runProxySection } from './proxy.js';
import { runQuotasSection } from './quotas.js';
import { runSessionEndSection } from './session-end.js';
import { runTlsSection } from './tls.js';
import { runUpstreamTlsSection } from './upstream-tls.js';
import { runWrongCredentialsSection } from './wrong-credentials.js';

const SECTIONS: Record<string, () => Promise<unknown>> = {
  auth: runAuthSection,
  proxy: () => runProxySection(),
  engines: () => runEnginesSection(),
  async: () => runAsyncSection(),
  memory: runMemorySection,
  credentials: runWrongCredentialsSection,
  json: runJsonBodySection,
  paths: runPathsSection,
  builds: runBuildsSection,
  flood: runFloodSection,
  floor: runFloorSection,
  limits: runLimitsSection,
  quotas: runQuotasSection,
  authz: runAuthzSection,
  dpop: runDpopSection,
  oidc: runOidcSection,
  providers: runProvidersSection,
  'session-end': runSessionEndSection,
  assertion: runAssertionSection,
  'upstream-tls': runUpstreamTlsSection,
  tls: () => runTlsSection(),
  profile: runProfileSection,
};
/** Sections that run only when named: they need something from the caller. */
const ON_REQUEST = new Set(['builds', 'profile']);

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in SECTIONS));
if (unknown.length > 0) {
  process.stderr.write(`unknown section(s): ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}\n`);
  process.exit(2);
}

const chosen = wanted.length > 0 ? wanted : Object.keys(SECTIONS).filter((name) => !ON_REQUEST.has(name));
process.stdout.write(`[bench] building dist/, then: ${chosen.join(', ')}\n`);
// h2load, the tls section's HTTP/2 generator: installed where it can be, or the run stops here saying how.
execFileSync('bash', ['scripts/bench-prerequisites.sh'], { stdio: 'inherit' });
buildGatehouse();
for (const [i, name] of chosen.entries()) {
  const started = performance.now();
  process.stdout.write(`[bench] section ${i + 1}/${chosen.length}: ${name}\n`);
  await SECTIONS[name]!();
  process.stdout.write(`[bench] section ${name} done in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
}
