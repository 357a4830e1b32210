// `gatehouse check-config --production`: the embedded default (a quick start's
// config) fails, naming the demo user first and every other finding with its
// fix, exit 78; a config shaped as the Kubernetes deployment runs it, with
// real secrets in its environment, passes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_FILE } from '../../src/config-load/load.js';
import { PRODUCTION_CHECKS } from '../../src/config-load/production-checks.js';
import { runGatehouse } from '../helpers/cli.js';
import { writeTestUsers } from '../helpers/gateway.js';

// One `openssl rand -base64 32`, as it came out: what the operator puts in the Secret.
const SERVICE_TOKEN = 'gcMugzHrI6qONY9jXUcnMs2uOZ9GjrcA4hTpBfAvqfM=';

let dir: string;
/** Folders as the pod has them: the config mounted read-only, the users Secret, the data volume. */
let configFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-production-cli-'));
  for (const folder of ['etc/gatehouse', 'etc/gatehouse-users', 'var/lib/gatehouse']) mkdirSync(join(dir, folder), { recursive: true });
  await writeTestUsers(join(dir, 'etc/gatehouse-users/users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  configFile = join(dir, 'etc/gatehouse/gatehouse.yaml');
  // The Kubernetes example's config (deploy/kubernetes), with this machine's folders and trusted proxies set for an ingress.
  writeFileSync(
    configFile,
    `server:
  host: 0.0.0.0
  port: 8080
  shutdownGraceS: 30
  trustedProxies: [10.0.0.0/8]
admin:
  host: 0.0.0.0
  port: 9090
store:
  keyPrefix: 'gatehouse:'
identity:
  provider: local
  usersIn: store
  usersFile: ${join(dir, 'etc/gatehouse-users/users.yaml')}
tokens:
  issuer: https://gatehouse.example.com
  keysFile: ${join(dir, 'var/lib/gatehouse/keys.json')}
  clients: []
requests:
  journalDir: ${join(dir, 'var/lib/gatehouse/journal')}
routes:
  - name: orders
    prefix: /orders
    upstreams: [http://orders.default.svc.cluster.local:8080]
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The environment the Deployment gives the container from its Secret. */
const POD_ENV = {
  GATEHOUSE_SERVICE_TOKEN: SERVICE_TOKEN,
  REDIS_URL: 'redis-sentinel://redis-sentinel-0.redis-sentinel:26379,redis-sentinel-1.redis-sentinel:26379/mymaster',
};

describe('gatehouse check-config --production', () => {
  it('fails the embedded default, exit 78, naming the demo user first and every finding with its fix', async () => {
    const result = await runGatehouse(['check-config', '--production']);
    expect(result.code).toBe(78);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe(
      `gatehouse: ${DEFAULT_CONFIG_FILE}: identity.usersFile: holds the demo user "demo" of config/users.yaml, whose password the README prints [demo-user]; ` +
        'fix: gatehouse users remove demo, then add your own users with gatehouse users add',
    );
    const named = lines.map((line) => {
      const match = new RegExp(`^gatehouse: ${DEFAULT_CONFIG_FILE}: ([a-zA-Z.]+): .+ \\[([a-z-]+)\\]; fix: .+$`).exec(line);
      expect(match, line).not.toBeNull();
      return [match![1], match![2]];
    });
    expect(named).toEqual([
      ['identity.usersFile', 'demo-user'],
      ['store.url', 'memory-store'],
      ['tokens.issuer', 'http-issuer'],
      ['requests.serviceToken', 'service-token'],
    ]);
  });

  it("passes the Kubernetes deployment's config with real secrets in its environment", async () => {
    expect(await runGatehouse(['--config', configFile, 'check-config', '--production'], POD_ENV)).toEqual({
      code: 0,
      stdout: `configuration OK for production (${configFile}): ${PRODUCTION_CHECKS.length} production checks passed\n`,
      stderr: '',
    });
  });

  it('judges the config first: a problem any start refuses is told as check-config tells it, exit 78', async () => {
    const result = await runGatehouse(['--config', configFile, 'check-config', '--production'], { ...POD_ENV, GATEHOUSE_SERVICE_TOKEN: 'changeme'.repeat(5) });
    expect(result).toEqual({
      code: 78,
      stdout: '',
      stderr:
        `gatehouse: ${configFile}: requests.serviceToken (from GATEHOUSE_SERVICE_TOKEN): ` +
        'is a placeholder ("changeme"), not a secret: make one with `openssl rand -base64 32`\n',
    });
  });

  it('without --production, passes the embedded default as before', async () => {
    expect((await runGatehouse(['check-config'])).code).toBe(0);
  });
});
