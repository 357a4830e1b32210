// `npm run bench [-- section …]`: builds Gatehouse, starts everything it
// needs on loopback, and measures it against its baselines in the same run.
// Sections: auth, proxy, engines (all by default).
import { runAuthSection } from './auth.js';
import { buildGatehouse } from './lib/gatehouse.js';
import { runEnginesSection } from './engines.js';
import { runProxySection } from './proxy.js';

const SECTIONS: Record<string, () => Promise<unknown>> = {
  auth: runAuthSection,
  proxy: () => runProxySection(process.env.BENCH_DURATION_S ? { durationS: Number(process.env.BENCH_DURATION_S) } : {}),
  engines: () => runEnginesSection(Number(process.env.BENCH_DURATION_S ?? 10)),
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in SECTIONS));
if (unknown.length > 0) {
  process.stderr.write(`unknown section(s): ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}\n`);
  process.exit(2);
}

buildGatehouse();
for (const name of wanted.length > 0 ? wanted : Object.keys(SECTIONS)) await SECTIONS[name]!();
