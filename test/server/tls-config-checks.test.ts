// A TLS pair the listener could not serve is a config error, found before
// anything is written or bound: the field's path and what is wrong, exit 78.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config-load/load.js';
import { runGatehouse } from '../helpers/cli.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { makeTlsPair, type TlsPair } from '../helpers/tls-pair.js';

/** `gatehouse start` through tsx: slow on a busy machine, whatever the gateway does. */
const SPAWN_TIMEOUT_MS = 60_000;

describe('server.tls checked at start', () => {
  let dir: string;
  let first: TlsPair;
  let second: TlsPair;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-tls-check-'));
    first = makeTlsPair(dir, 'first', 0x2001);
    second = makeTlsPair(dir, 'second', 0x2002);
    await writeTestUsers(join(dir, 'users.yaml'), []);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function configWith(name: string, tls: string): string {
    const folder = mkdtempSync(join(dir, `${name}-`));
    copyFileSync(join(dir, 'users.yaml'), join(folder, 'users.yaml'));
    const file = join(folder, 'gatehouse.yaml');
    writeFileSync(
      file,
      [
        'server:',
        '  host: 127.0.0.1',
        '  port: 0',
        `  tls: ${tls}`,
        'admin: {host: 127.0.0.1, port: 0}',
        'identity: {provider: local, usersFile: ./users.yaml}',
        'tokens: {keysFile: ./keys.json}',
      ].join('\n'),
    );
    return file;
  }

  it(
    'refuses to start with a key that is not the certificate’s: exit 78, the field named, nothing written',
    async () => {
      const file = configWith('mismatch', `{certFile: ${first.certFile}, keyFile: ${second.keyFile}}`);
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'start', '--config', file], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const [code] = (await once(child, 'close')) as [number | null];
      expect(code).toBe(78);
      expect(stderr.trimEnd()).toBe(
        `gatehouse: ${file}: server.tls.keyFile: ${second.keyFile} is not the private key of the first certificate in ${first.certFile} (CN=first)`,
      );
      // The check came first: the keys file a start creates was never written.
      expect(readdirSync(join(file, '..')).sort()).toEqual(['gatehouse.yaml', 'users.yaml']);
    },
    SPAWN_TIMEOUT_MS,
  );

  it('names a missing certificate file and a file that holds no certificate (check-config, exit 78)', async () => {
    const missing = configWith('missing', `{certFile: ./nowhere.crt, keyFile: ${first.keyFile}}`);
    const run = await runGatehouse(['check-config', '--config', missing]);
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`server.tls.certFile: cannot read ${join(missing, '..', 'nowhere.crt')} (ENOENT)`);

    const garbage = join(dir, 'garbage.crt');
    // A certificate cut off half-way, as a renewal caught in the middle leaves it.
    writeFileSync(garbage, first.cert.subarray(0, first.cert.length / 2));
    const cut = configWith('cut', `{certFile: ${garbage}, keyFile: ${first.keyFile}}`);
    const cutRun = await runGatehouse(['check-config', '--config', cut]);
    expect(cutRun.code).toBe(78);
    expect(cutRun.stderr).toContain(`server.tls.certFile: ${garbage} holds no PEM certificate`);
  });

  it('names a client CA bundle that is not one', async () => {
    const file = configWith('ca', `{certFile: ${first.certFile}, keyFile: ${first.keyFile}, clientCertificates: {caFile: ${first.keyFile}}}`);
    const run = await runGatehouse(['check-config', '--config', file]);
    expect(run.code).toBe(78);
    expect(run.stderr).toContain(`server.tls.clientCertificates.caFile: ${first.keyFile} holds no PEM certificate`);
  });

  it('makes the issuer an https:// URL when the config names none', () => {
    const { config } = validateConfig(
      {
        server: { port: 8443, tls: { certFile: first.certFile, keyFile: first.keyFile } },
        identity: { provider: 'local', usersFile: './users.yaml' },
        tokens: { keysFile: './keys.json' },
      },
      { baseDir: dir, env: {} },
    );
    expect(config?.tokens.issuer).toBe('https://localhost:8443');
  });

  it('passes a whole pair', async () => {
    const file = configWith('whole', `{certFile: ${first.certFile}, keyFile: ${first.keyFile}}`);
    const run = await runGatehouse(['check-config', '--config', file]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});
