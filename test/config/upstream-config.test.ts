// The config of TLS to upstreams and of identity assertions: every mistake a
// problem with its field path (exit 78 from check-config), found before
// anything binds; files named relative to the config file's folder.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { createTestAuthority, type TestAuthority } from '../helpers/certificates.js';
import { runGatehouse } from '../helpers/cli.js';
import { configProblems } from '../helpers/config-problems.js';
import { writeTestUsers } from '../helpers/gateway.js';

let ca: TestAuthority;
let dir: string;

beforeAll(async () => {
  ca = createTestAuthority();
  dir = ca.dir;
  ca.issue('client', { usage: 'client' });
  ca.issue('someone-else', { usage: 'client' });
  mkdirSync(join(dir, 'certs'));
  for (const file of ['ca.crt', 'client.crt', 'client.key', 'someone-else.key']) copyFileSync(join(dir, file), join(dir, 'certs', file));
  writeFileSync(join(dir, 'certs', 'not-a-cert.pem'), 'hello\n');
  // A pair that parses and matches, with a key OpenSSL will not use (below its security level).
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:512', '-nodes', '-keyout', 'certs/weak.key', '-out', 'certs/weak.crt', '-subj', '/CN=weak', '-days', '1'],
    {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function config(routes: unknown[], extra: Record<string, unknown> = {}) {
  return {
    identity: { provider: 'local', usersFile: './users.yaml' },
    tokens: { keysFile: './keys.json' },
    routes,
    ...extra,
  };
}

const parse = (raw: unknown) => () => parseConfig(raw, { baseDir: dir, env: {} });

async function checkConfig(raw: unknown): Promise<{ code: number; stderr: string }> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(raw));
  return runGatehouse(['check-config', '--config', file]);
}

describe('routes[].tls', () => {
  it('a client certificate needs its key, and the other way round', () => {
    const problems = configProblems(parse(config([{ prefix: '/a', upstreams: ['https://a.internal'], tls: { certFile: './certs/client.crt' } }])));
    expect(problems).toEqual(['routes[0].tls.keyFile: a client certificate needs both certFile and keyFile']);
  });

  it('refuses an http:// upstream on a route with tls settings: never sent in the clear by mistake', () => {
    const routes = [{ prefix: '/a', upstreams: ['https://a.internal', 'http://b.internal'], tls: { caFile: './certs/ca.crt' } }];
    expect(configProblems(parse(config(routes)))).toEqual([
      expect.stringMatching(/^routes\[0\]\.upstreams\[1\]: an http:\/\/ upstream on a route with tls settings/),
    ]);
  });

  it("resolves the files from the config file's folder, and check-config passes them", async () => {
    const tls = { caFile: './certs/ca.crt', certFile: './certs/client.crt', keyFile: './certs/client.key', servername: 'a.internal', http2: true };
    const parsed = parseConfig(config([{ prefix: '/a', upstreams: ['https://127.0.0.1:8443'], tls }]), { baseDir: dir, env: {} });
    expect(parsed.routes[0]!.tls).toEqual({
      ...tls,
      caFile: join(dir, 'certs/ca.crt'),
      certFile: join(dir, 'certs/client.crt'),
      keyFile: join(dir, 'certs/client.key'),
    });
    const result = await checkConfig(
      config([{ prefix: '/a', upstreams: ['https://127.0.0.1:8443'], tls }], { proxy: { upstreamTls: { caFile: './certs/ca.crt' } } }),
    );
    expect(result).toMatchObject({ code: 0 });
  });

  it('a missing, unreadable or wrong file is a problem with its field path, exit 78', async () => {
    const result = await checkConfig(
      config(
        [
          { prefix: '/a', upstreams: ['https://a.internal'], tls: { caFile: './certs/missing.crt' } },
          {
            prefix: '/b',
            upstreams: ['https://b.internal'],
            tls: { caFile: './certs/not-a-cert.pem', certFile: './certs/client.crt', keyFile: './certs/someone-else.key' },
          },
          { prefix: '/c', upstreams: ['https://c.internal'], tls: { certFile: './certs/not-a-cert.pem', keyFile: './certs/not-a-cert.pem' } },
        ],
        { proxy: { upstreamTls: { caFile: './certs' } } },
      ),
    );
    expect(result.code).toBe(78);
    const lines = result.stderr.trim().split('\n');
    const expected = [
      /proxy\.upstreamTls\.caFile: cannot read .*certs \(EISDIR\)/,
      /routes\[0\]\.tls\.caFile: cannot read .*missing\.crt \(ENOENT\)/,
      /routes\[1\]\.tls\.caFile: .*not-a-cert\.pem holds no PEM certificate/,
      /routes\[1\]\.tls\.keyFile: .*someone-else\.key is not the private key of the first certificate in .*client\.crt/,
      /routes\[2\]\.tls\.certFile: .*not-a-cert\.pem holds no PEM certificate/,
      /routes\[2\]\.tls\.keyFile: .*not-a-cert\.pem is not a PEM private key/,
    ];
    for (const pattern of expected)
      expect(
        lines.some((line) => pattern.test(line)),
        String(pattern),
      ).toBe(true);
    // A key is never quoted back.
    expect(result.stderr).not.toContain('PRIVATE KEY');
  });

  it("a client pair that OpenSSL refuses is found by the check, as the listener's pair is, not at the first handshake", async () => {
    const result = await checkConfig(
      config([{ prefix: '/a', upstreams: ['https://a.internal'], tls: { certFile: './certs/weak.crt', keyFile: './certs/weak.key' } }]),
    );
    expect(result.code).toBe(78);
    expect(result.stderr).toMatch(/routes\[0\]\.tls\.certFile: .*weak\.crt and .*weak\.key are refused by OpenSSL \(.*key too small\)/);
    expect(result.stderr).not.toContain('PRIVATE KEY');
  });
});

describe('routes[].identityAssertion', () => {
  it('is refused on a public route: nobody is known there', () => {
    const problems = configProblems(parse(config([{ prefix: '/a', upstreams: ['http://a.internal'], auth: 'none', identityAssertion: {} }])));
    expect(problems).toEqual(['routes[0].identityAssertion: a public route (auth: none) has no caller to assert']);
  });

  it('lives 60 s at most', () => {
    const problems = configProblems(parse(config([{ prefix: '/a', upstreams: ['http://a.internal'], identityAssertion: { lifetimeS: 61 } }])));
    expect(problems).toEqual([expect.stringMatching(/^routes\[0\]\.identityAssertion\.lifetimeS: /)]);
  });

  it('is refused when fronting an OpenID Provider: the gateway holds no signing keys', () => {
    const oidc = {
      identity: { provider: 'oidc', issuer: 'https://idp.example.test', clientId: 'gatehouse', clientSecret: 'a-client-secret-of-some-length' },
      routes: [{ prefix: '/a', upstreams: ['http://a.internal'], identityAssertion: {} }],
    };
    expect(configProblems(parse(oidc))).toEqual([
      expect.stringMatching(/^routes\[0\]\.identityAssertion: needs the gateway's own signing keys \(identity\.provider: local\)/),
    ]);
  });

  it('its header cannot be one the gateway handles otherwise', () => {
    const clash = config([], { proxy: { identityHeaders: { assertion: 'x-gatehouse-subject' } } });
    expect(configProblems(parse(clash))).toEqual([expect.stringMatching(/^proxy\.identityHeaders: each identity header needs a name of its own/)]);
    for (const name of ['Authorization', 'DPoP', 'X-Gatehouse-Client-Subject', 'Connection']) {
      const taken = config([], { proxy: { identityHeaders: { assertion: name } } });
      const problem = new RegExp(`^proxy\\.identityHeaders: "${name.toLowerCase()}" is a header the gateway already handles`);
      expect(configProblems(parse(taken)), name).toEqual([expect.stringMatching(problem)]);
    }
  });
});
