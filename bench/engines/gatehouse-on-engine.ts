// `node dist-bench/bench/engines/gatehouse-on-engine.js ENGINE CONFIG`: one
// Gatehouse process, as `gatehouse start` runs it with one worker, forwarding
// with ENGINE (undici, http-proxy or http-proxy-3). Every row of the engines
// section starts here, undici's included, so the rows differ only in the
// engine. Compiled by tsc like dist/ (tsconfig.bench.json): run from source
// through a loader, the same gateway measured about 6 % slower.
//
// BENCH_SESSION_HOLDINGS=off (read once, here, never by the product) runs the
// same gateway with the session-holdings registry's add and remove made
// empty: the session-end section's A/B of what holding an exchange for its
// session costs a whole request (bench/session-end.ts).
import { createGateway } from '../../src/app/gateway.js';
import { loadConfig } from '../../src/config-load/load.js';
import { createLogger } from '../../src/observability/logger.js';
import { SessionHoldings } from '../../src/proxy/session-holdings.js';
import { HttpProxyEngine } from './http-proxy-engine.js';

const [name, file] = process.argv.slice(2);
if (name !== 'undici' && name !== 'http-proxy' && name !== 'http-proxy-3') {
  process.stderr.write('usage: gatehouse-on-engine undici|http-proxy|http-proxy-3 [CONFIG]\n');
  process.exit(2);
}
if (process.env.BENCH_SESSION_HOLDINGS === 'off') {
  SessionHoldings.prototype.add = () => {};
  SessionHoldings.prototype.remove = () => {};
}
const config = loadConfig(file === undefined ? {} : { file });
// Absent for undici: the gateway's own engine.
const engine = name === 'undici' ? undefined : new HttpProxyEngine(name, config.proxy.maxSocketsPerTarget);
const logger = createLogger(config);
const gateway = await createGateway(config, { logger, ...(engine ? { engine } : {}) });
await gateway.listen();
process.once('SIGTERM', () => {
  gateway.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
});
