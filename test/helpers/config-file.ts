// A gateway started from a real YAML config file in a temp dir, the way
// `gatehouse start --config …` starts one: loadConfig, then createGateway with
// the file watched for route changes.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createGateway, type Gateway } from '../../src/app/gateway.js';
import { loadConfig } from '../../src/config-load/load.js';
import { DEFAULT_TEST_USERS, writeTestUsers } from './gateway.js';
import { logSink, type LogSink } from './log-sink.js';

export interface FileGateway {
  gateway: Gateway;
  url: string;
  dir: string;
  configFile: string;
  logs: LogSink;
  /** Rewrites the config file with these routes (everything else as at start). */
  writeRoutes(routes: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/** The shape of config/gatehouse.yaml, with loopback listeners on port 0 and files in `dir`. */
export function configYaml(routes: unknown[]): string {
  return `# Gatehouse test configuration (same shape as config/gatehouse.yaml).
server:
  host: 127.0.0.1
  port: 0
  apiBodyLimitBytes: 16384
  trustedProxies: []

admin:
  enabled: true
  host: 127.0.0.1
  port: 0

log:
  level: info

store:
  keyPrefix: "gatehouse:"

identity:
  provider: local
  usersFile: ./users.yaml
  watch: true

# Load shedding reads this machine's event loop, which other tests make late at random: on only where a test asks for it.
limits:
  loadShedding:
    enabled: false

tokens:
  issuer: http://localhost:8080
  audience: gatehouse
  accessTokenTtlS: 60
  refreshTokenTtlS: 86400
  algorithm: EdDSA
  keysFile: ./keys.json
  clockToleranceS: 5
  cacheMaxEntries: 100000

${stringify({ routes })}`;
}

export interface FileGatewayOptions {
  /** Runs after the config was loaded and before the gateway is created (as an edit during start-up would). */
  afterLoad?: (configFile: string) => Promise<void>;
  /** The config file's name in the temp dir (default gatehouse.yaml). */
  fileName?: string;
}

export async function startFileGateway(routes: unknown[], options: FileGatewayOptions = {}): Promise<FileGateway> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-reload-'));
  await writeTestUsers(join(dir, 'users.yaml'), DEFAULT_TEST_USERS);
  const configFile = join(dir, options.fileName ?? 'gatehouse.yaml');
  await writeFile(configFile, configYaml(routes));
  const logs = logSink('info');
  const config = loadConfig({ file: configFile, env: {} });
  await options.afterLoad?.(configFile);
  const gateway = await createGateway(config, { logger: logs.logger, configFile });
  const { url } = await gateway.listen();
  return {
    gateway,
    url,
    dir,
    configFile,
    logs,
    writeRoutes: (next) => writeFile(configFile, configYaml(next)),
    async close() {
      await gateway.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
