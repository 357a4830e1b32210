// `gatehouse clients add` and `hash-secret`: what they print is what the
// config takes and what the gateway then authenticates, the secret a client
// brings is judged like any configured secret, and the reference's example
// hash is one the validator accepts.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { CLIENT_SECRET_HASH_EXAMPLE } from '../../src/config/tokens-schema.js';
import { judgeSecret } from '../../src/core/secret-strength.js';
import { verifyPassword } from '../../src/users/passwords.js';
import { runGatehouse } from '../helpers/cli.js';
import { startTestGateway } from '../helpers/gateway.js';

// One `openssl rand -base64 32`, as it came out.
const OPENSSL_SECRET = '0QXLEikl7PrVtPoXIqcDGolwCvputLBwwXYQmgedDHs=';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-clients-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A config with these clients that check-config judges: exit code and stderr. */
async function checkWithClients(clients: unknown[]): Promise<{ code: number; stderr: string }> {
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(join(dir, 'users.yaml'), 'users: {}\n');
  writeFileSync(file, JSON.stringify({ identity: { provider: 'local', usersFile: './users.yaml' }, tokens: { keysFile: './keys.json', clients } }));
  const { code, stderr } = await runGatehouse(['--config', file, 'check-config']);
  return { code, stderr };
}

async function introspect(base: string, id: string, secret: string): Promise<number> {
  const response = await fetch(`${base}/oauth/introspect`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` },
    body: 'token=x',
  });
  await response.arrayBuffer();
  return response.status;
}

describe('gatehouse clients add', () => {
  it('prints, as one YAML document, a new strong secret and the tokens.clients entry that the config takes and the gateway authenticates', async () => {
    const result = await runGatehouse(['clients', 'add', 'orders-service']);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const printed = parse(result.stdout) as { secret: string; tokens: { clients: Array<{ id: string; secretHash: string }> } };
    const { secret } = printed;
    const [entry] = printed.tokens.clients;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(judgeSecret(secret).strong).toBe(true);
    expect(entry).toEqual({ id: 'orders-service', secretHash: expect.stringMatching(/^scrypt\$ln=15,r=8,p=1\$/) });
    expect(await checkWithClients([entry])).toEqual({ code: 0, stderr: '' });

    const gw = await startTestGateway({ config: { tokens: { clients: [entry] } } });
    try {
      expect(await introspect(gw.url, 'orders-service', secret)).toBe(200);
      expect(await introspect(gw.url, 'orders-service', `${secret.slice(0, -1)}x`)).toBe(401);
    } finally {
      await gw.close();
    }
  });

  it('makes a different secret each time', async () => {
    const secrets = await Promise.all([1, 2].map(async () => (parse((await runGatehouse(['clients', 'add', 'a'])).stdout) as { secret: string }).secret));
    expect(secrets[0]).not.toBe(secrets[1]);
  });

  it('prints an ID that YAML would read as a number, a boolean or null as a string', async () => {
    for (const id of ['123', 'true', '~', 'null']) {
      const { tokens } = parse((await runGatehouse(['clients', 'add', id])).stdout) as { tokens: { clients: Array<{ id: unknown }> } };
      expect(tokens.clients[0]!.id).toBe(id);
    }
  });

  it('refuses a client ID that would need encoding, or none, as a wrong command line', async () => {
    for (const argv of [
      ['clients', 'add', 'orders service'],
      ['clients', 'add', 'a:b'],
      ['clients', 'add'],
    ]) {
      const result = await runGatehouse(argv);
      expect(result, argv.join(' ')).toMatchObject({ code: 2, stdout: '' });
    }
  });
});

describe('gatehouse clients hash-secret', () => {
  it('hashes a secret from stdin into what tokens.clients[].secretHash takes', async () => {
    const result = await runGatehouse(['clients', 'hash-secret'], {}, `${OPENSSL_SECRET}\n`);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const secretHash = result.stdout.trim();
    expect(await verifyPassword(OPENSSL_SECRET, secretHash)).toBe(true);
    expect(await checkWithClients([{ id: 'orders-service', secretHash }])).toEqual({ code: 0, stderr: '' });
  });

  it.each([
    ['a placeholder', 'replace-me-with-at-least-32-random-characters', 'is a placeholder ("replace"), not a secret'],
    ['one character repeated', 'a'.repeat(40), 'is one character repeated'],
    ['changeme', 'changeme'.repeat(5), 'is a placeholder ("changeme"), not a secret'],
  ])('refuses %s (exit 1), saying how to make one and never printing it', async (_name, secret, why) => {
    const result = await runGatehouse(['clients', 'hash-secret'], {}, secret);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `gatehouse: the client secret ${why}: make one with \`openssl rand -base64 32\`, or let \`gatehouse clients add\` make one\n`,
    });
  });
});

describe('gatehouse clients hash-secret without a secret', () => {
  it('says so, exit 1', async () => {
    for (const stdin of ['', '\n']) {
      expect(await runGatehouse(['clients', 'hash-secret'], {}, stdin)).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: no secret on stdin\n' });
    }
  });
});

describe("the reference's secretHash example", () => {
  it('is the one the schema documents, and the validator accepts it as written', () => {
    const reference = readFileSync('docs/reference/configuration.md', 'utf8');
    const row = reference.split('\n').find((line) => line.startsWith('| `tokens.clients[].secretHash` |'))!;
    const example = /E\.g\. `([^`]+)`/.exec(row)![1]!;
    expect(example).toBe(CLIENT_SECRET_HASH_EXAMPLE);
    const raw = {
      identity: { provider: 'local', usersFile: './users.yaml' },
      tokens: { keysFile: './keys.json', clients: [{ id: 'orders-service', secretHash: example }] },
    };
    expect(parseConfig(raw, { baseDir: dir, env: {} }).tokens.clients).toEqual([{ id: 'orders-service', secretHash: example }]);
  });

  it('was refused in the form the reference used to show', () => {
    const raw = {
      identity: { provider: 'local', usersFile: './users.yaml' },
      tokens: {
        keysFile: './keys.json',
        clients: [{ id: 'orders-service', secretHash: 'scrypt$16384$8$1$c2FsdHNhbHRzYWx0c2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g' }],
      },
    };
    expect(() => parseConfig(raw, { baseDir: dir, env: {} })).toThrow(/tokens\.clients\[0\]\.secretHash: must be a scrypt hash/);
  });
});
