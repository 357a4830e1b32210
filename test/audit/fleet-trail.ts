// A deployment for the audit tests: instances on one real Redis, and the config file the operator's commands
// (and a reloading instance) read.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { loadConfig } from '../../src/config-load/load.js';
import { runGatehouse } from '../helpers/cli.js';
import { startTestGateway, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';

export interface Deployment {
  dir: string;
  configFile: string;
  writeConfig(routes: unknown[]): Promise<void>;
  /** An instance started from its own directory, on the same Redis. */
  instance(): Promise<TestGateway>;
  /** An instance started from the config file, which it reloads. */
  fileInstance(): Promise<{ gateway: Gateway; url: string; adminUrl: string }>;
  gatehouse(...args: string[]): ReturnType<typeof runGatehouse>;
}

/** `store` absent: the in-memory store, and the trail in the local file. */
export async function deployment(store?: { url: string; keyPrefix: string }, limits: Record<string, unknown> = {}): Promise<Deployment> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-audit-'));
  const configFile = join(dir, 'gatehouse.yaml');
  await writeTestUsers(join(dir, 'users.yaml'), [
    { name: 'alice', password: 'alice-password-1' },
    { name: 'bob', password: 'bob-password-1' },
  ]);
  const writeConfig = (routes: unknown[]) =>
    writeFile(
      configFile,
      JSON.stringify({
        server: { host: '127.0.0.1', port: 0 },
        admin: { host: '127.0.0.1', port: 0 },
        ...(store && { store }),
        identity: { provider: 'local', usersFile: 'users.yaml' },
        tokens: { issuer: 'http://127.0.0.1:8080', keysFile: 'keys.json' },
        limits: { loadShedding: { enabled: false }, ...limits },
        audit: { checkpointEvery: 3 },
        routes,
      }),
    );
  await writeConfig([]);
  return {
    dir,
    configFile,
    writeConfig,
    instance: () => startTestGateway({ config: { store: { ...store }, audit: { checkpointEvery: 3 } } }),
    async fileInstance() {
      const gateway = await createGateway(loadConfig({ file: configFile, env: {} }), { logger: logSink().logger, configFile });
      const { url, adminUrl } = await gateway.listen();
      return { gateway, url, adminUrl: adminUrl! };
    },
    gatehouse: (...args) => runGatehouse(['--config', configFile, ...args]),
  };
}
