// `npm run bench [-- section …]`: builds Gatehouse, starts everything it
// needs on loopback, and measures it against its baselines in the same run.
// Sections: auth, proxy, engines, async, memory, credentials, json, limits (all by default). BENCH_DURATION_S and
// BENCH_ROUNDS shorten a run (defaults: 10 s, 3 rounds); BENCH_FIXED_RATE sets the
// fixed-rate latency run (default 1000 req/s).
import { runAsyncSection } from './async.js';
import { runAuthSection } from './auth.js';
import { buildGatehouse } from './lib/gatehouse.js';
import { runEnginesSection } from './engines.js';
import { runJsonBodySection } from './json-body.js';
import { runLimitsSection } from './limits.js';
import { runMemorySection } from './memory.js';
import { runProxySection } from './proxy.js';
import { runWrongCredentialsSection } from './wrong-credentials.js';

const SECTIONS: Record<string, () => Promise<unknown>> = {
  auth: runAuthSection,
  proxy: () => runProxySection(),
  engines: () => runEnginesSection(),
  async: () => runAsyncSection(),
  memory: runMemorySection,
  credentials: runWrongCredentialsSection,
  json: runJsonBodySection,
  limits: runLimitsSection,
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in SECTIONS));
if (unknown.length > 0) {
  process.stderr.write(`unknown section(s): ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}\n`);
  process.exit(2);
}

buildGatehouse();
for (const name of wanted.length > 0 ? wanted : Object.keys(SECTIONS)) await SECTIONS[name]!();
