// `node dist-bench/bench/engines/gatehouse-on-engine.js ENGINE CONFIG`: one
// Gatehouse process, as `gatehouse start` runs it with one worker, forwarding
// with ENGINE (undici, http-proxy or http-proxy-3). Every row of the engines
// section starts here, undici's included, so the rows differ only in the
// engine. Compiled by tsc like dist/ (tsconfig.bench.json): run from source
// through a loader, the same gateway measured about 6 % slower.
import { createGateway } from '../../src/app.js';
import { loadConfig } from '../../src/config/load.js';
import { createLogger } from '../../src/observability/logger.js';
import type { ForwardingEngine } from '../../src/proxy/engine.js';
import { HttpProxyEngine } from './http-proxy-engine.js';

/** Absent for undici: the gateway's own engine. */
function engineNamed(name: string | undefined): ForwardingEngine | undefined {
  if (name === 'http-proxy' || name === 'http-proxy-3') return new HttpProxyEngine(name);
  if (name === 'undici') return undefined;
  process.stderr.write('usage: gatehouse-on-engine undici|http-proxy|http-proxy-3 CONFIG\n');
  process.exit(2);
}

const [name, file] = process.argv.slice(2);
const engine = engineNamed(name);
const config = loadConfig(file === undefined ? {} : { file });
const logger = createLogger(config);
const gateway = await createGateway(config, { logger, ...(engine ? { engine } : {}) });
await gateway.listen();
process.once('SIGTERM', () => {
  gateway.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
