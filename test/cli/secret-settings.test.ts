// A service token that is a placeholder, a repeated character or guessable is
// refused where a config is judged (`start` and `check-config`): exit 78, the
// setting and the variable it came from named, how to make one said, and the
// secret itself never printed. What `openssl rand -base64 32` makes starts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGatehouse } from '../helpers/cli.js';
import { writeTestUsers } from '../helpers/gateway.js';

// One `openssl rand -base64 32`, as it came out.
const OPENSSL_TOKEN = 'r81ALjygqdXGxH1xvmak22bo0JxVWBfba0hpyNV10KE=';

let dir: string;
let configFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-secrets-'));
  configFile = join(dir, 'gatehouse.yaml');
  await writeTestUsers(join(dir, 'users.yaml'), []);
  writeFileSync(
    configFile,
    [
      'server: {host: 127.0.0.1, port: 0}',
      'admin: {enabled: false}',
      'identity: {provider: local, usersFile: ./users.yaml}',
      'tokens: {keysFile: ./keys.json}',
      'routes: []',
      '',
    ].join('\n'),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const WEAK_TOKENS: Array<[string, string, string]> = [
  ['the 32-character placeholder', 'replace-me-with-at-least-32-random-characters', 'is a placeholder ("replace"), not a secret'],
  ['one character 40 times', 'a'.repeat(40), 'is one character repeated'],
  ['changeme repeated', 'changeme'.repeat(5), 'is a placeholder ("changeme"), not a secret'],
];

describe('GATEHOUSE_SERVICE_TOKEN', () => {
  it.each(WEAK_TOKENS)('refuses %s at check-config and at start, exit 78, saying how to make one', async (_name, token, why) => {
    for (const command of ['check-config', 'start']) {
      const result = await runGatehouse(['--config', configFile, command], { GATEHOUSE_SERVICE_TOKEN: token });
      expect(result, command).toEqual({
        code: 78,
        stdout: '',
        stderr: `gatehouse: ${configFile}: requests.serviceToken (from GATEHOUSE_SERVICE_TOKEN): ${why}: make one with \`openssl rand -base64 32\`\n`,
      });
      expect(result.stderr).not.toContain(token);
    }
  });

  it('refuses the same in the config file, named by its path', async () => {
    const inFile = join(dir, 'in-file.yaml');
    writeFileSync(
      inFile,
      `identity: {provider: local, usersFile: ./users.yaml}\ntokens: {keysFile: ./keys.json}\nrequests: {serviceToken: ${'a'.repeat(40)}}\n`,
    );
    expect(await runGatehouse(['--config', inFile, 'check-config'])).toMatchObject({
      code: 78,
      stderr: `gatehouse: ${inFile}: requests.serviceToken: is one character repeated: make one with \`openssl rand -base64 32\`\n`,
    });
  });

  it('accepts what openssl rand -base64 32 makes', async () => {
    expect(await runGatehouse(['--config', configFile, 'check-config'], { GATEHOUSE_SERVICE_TOKEN: OPENSSL_TOKEN })).toEqual({
      code: 0,
      stdout: `configuration OK (${configFile})\n`,
      stderr: '',
    });
  });
});
