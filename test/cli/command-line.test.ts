// The command line's one shape: `--help` on every command and subcommand
// (usage on stdout, exit 0, before any config is read), and every error as
// one line on stderr: 2 for a wrong command line, 78 for the config (a line
// per problem), 1 at run time.
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runGatehouse } from '../helpers/cli.js';
import { writeTestUsers } from '../helpers/gateway.js';

const ONE_LINE = /^gatehouse: [^\n]+\n$/;
const SUBCOMMANDS = [
  ['users', 'add'],
  ['users', 'disable'],
  ['users', 'enable'],
  ['users', 'remove'],
  ['users', 'list'],
  ['apikeys', 'create'],
  ['apikeys', 'revoke'],
  ['apikeys', 'list'],
  ['keys', 'rotate'],
  ['keys', 'list'],
  ['clients', 'add'],
  ['clients', 'hash-secret'],
];

let dir: string;
let configFile: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-cli-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
  configFile = writeConfig(['identity: {provider: local, usersFile: ./users.yaml}', 'tokens: {keysFile: ./keys.json}']);
});

afterEach(() => {
  vi.restoreAllMocks();
});

function writeConfig(lines: string[], name = 'gatehouse.yaml'): string {
  const file = join(dir, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe('users and API keys with a fronted OpenID Provider', () => {
  it('refuse to run (exit 78): the provider keeps the users', async () => {
    const oidc = writeConfig(
      ['identity: {provider: oidc, issuer: "https://sso.example.com/realms/p", clientId: gatehouse, clientSecret: s}', 'tokens: {keysFile: ./keys.json}'],
      'oidc.yaml',
    );
    for (const argv of [
      ['users', 'list'],
      ['apikeys', 'list', 'alice'],
    ]) {
      const result = await runGatehouse(['--config', oidc, ...argv]);
      expect(result.code, argv.join(' ')).toBe(78);
      expect(result.stderr).toMatch(/identity\.provider: oidc: users and API keys live at the OpenID Provider and are managed there/);
    }
  });
});

describe('--help', () => {
  it('prints the overall usage, listing every command', async () => {
    for (const help of [['--help'], ['-h'], ['help']]) {
      const result = await runGatehouse(help);
      expect(result).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(/^usage: gatehouse \[--config FILE\] <command>/);
      for (const command of ['start', 'check-config', ...SUBCOMMANDS.map((s) => s.join(' '))]) expect(result.stdout).toContain(`  ${command}`);
    }
  });

  it("prints each command's and subcommand's own usage, wherever --help stands", async () => {
    const cases = [['start'], ['check-config'], ['users'], ['apikeys'], ['keys'], ['clients'], ...SUBCOMMANDS];
    for (const words of cases) {
      for (const argv of [
        [...words, '--help'],
        [...words, '-h'],
        [...words, 'alice', '--help'],
      ]) {
        const result = await runGatehouse(argv);
        expect(result, argv.join(' ')).toMatchObject({ code: 0, stderr: '' });
        expect(result.stdout, argv.join(' ')).toMatch(new RegExp(`^usage: gatehouse ${words.join(' ')}\\b`));
      }
    }
  });

  it('answers before the config is read: a broken config does not hide the help', async () => {
    const broken = writeConfig(['server: {port: nope}'], 'broken.yaml');
    for (const words of [['start'], ['check-config'], ['users', 'add'], ['keys']]) {
      const result = await runGatehouse(['--config', broken, ...words, '--help']);
      expect(result, words.join(' ')).toMatchObject({ code: 0, stderr: '' });
    }
  });
});

describe('a wrong command line', () => {
  it('is one line on stderr and exit code 2', async () => {
    const cases = [
      [],
      ['frobnicate'],
      ['start', '--port', '8080'],
      ['start', 'now'],
      ['check-config', '--strict'],
      ['users'],
      ['users', 'frobnicate'],
      ['users', 'add'],
      ['keys', 'list', 'extra'],
      ['apikeys', 'create', '--label'],
      ['--config'],
      ['--config='],
    ];
    for (const argv of cases) {
      const result = await runGatehouse(argv[0]?.startsWith('--config') ? argv : ['--config', configFile, ...argv]);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stdout, argv.join(' ')).toBe('');
      expect(result.stderr, argv.join(' ')).toMatch(ONE_LINE);
      expect(result.stderr, argv.join(' ')).toMatch(/\(see gatehouse [a-z -]*--help\)\n$/);
    }
  });

  it('is told before the config is read, for commands and their options', async () => {
    const missing = join(dir, 'missing.yaml');
    for (const argv of [['frobnicate'], ['start', '--port', '8080'], ['check-config', 'now'], ['users'], ['keys', 'frobnicate']]) {
      expect((await runGatehouse(['--config', missing, ...argv])).code, argv.join(' ')).toBe(2);
    }
  });

  it('names what was wrong', async () => {
    expect((await runGatehouse(['start', '--port', '8080'])).stderr).toBe("gatehouse: unknown option '--port' (see gatehouse start --help)\n");
    expect((await runGatehouse(['frobnicate'])).stderr).toBe('gatehouse: unknown command: frobnicate (see gatehouse --help)\n');
  });
});

describe('an invalid configuration', () => {
  it('gives exit code 78 and one line per problem, each naming the file and the field', async () => {
    const bad = writeConfig(
      [
        'server: {port: 70000}',
        'identity: {provider: local, usersFile: ./nobody.yaml}',
        'tokens: {keysFile: ./keys.json}',
        'routes:',
        '  - {name: orders, prefix: /orders, upstreams: ["http://127.0.0.1:1"]}',
        '  - {name: orders, prefix: /orders, upstreams: ["http://127.0.0.1:1"]}',
      ],
      'bad.yaml',
    );
    for (const command of [['check-config'], ['start'], ['users', 'list']]) {
      const result = await runGatehouse(['--config', bad, ...command]);
      expect(result.code, command.join(' ')).toBe(78);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trimEnd().split('\n');
      for (const line of lines) expect(line).toMatch(new RegExp(`^gatehouse: ${bad}: (server|routes|identity)[.\\[]`));
      expect(lines.map((line) => line.slice(`gatehouse: ${bad}: `.length).split(': ')[0])).toEqual(
        command[0] === 'users'
          ? ['server.port', 'routes[1].name', 'routes[1].prefix'] // users commands create the users file: no environment checks
          : ['server.port', 'routes[1].name', 'routes[1].prefix', 'identity.usersFile'],
      );
    }
  });

  it('names a config file that cannot be read', async () => {
    const missing = join(dir, 'missing.yaml');
    expect(await runGatehouse(['check-config', '--config', missing])).toEqual({
      code: 78,
      stdout: '',
      stderr: `gatehouse: ${missing}: cannot read the file: ENOENT\n`,
    });
  });

  it('takes the file from GATEHOUSE_CONFIG when there is no --config', async () => {
    expect((await runGatehouse(['check-config'], { GATEHOUSE_CONFIG: join(dir, 'missing.yaml') })).code).toBe(78);
  });
});

describe('check-config', () => {
  it('says OK and exits 0 for a sound config, writing nothing and opening no socket', async () => {
    const withRedis = writeConfig(
      [
        'identity: {provider: local, usersFile: ./users.yaml}',
        'tokens: {keysFile: ./keys.json}',
        'store: {url: "redis://127.0.0.1:1"}',
        'server: {port: 0, workers: 2}',
      ],
      'redis.yaml',
    );
    const before = readdirSync(dir).sort();
    const listen = vi.spyOn(Server.prototype, 'listen');
    const connect = vi.spyOn(Socket.prototype, 'connect');
    expect(await runGatehouse(['check-config', '--config', withRedis])).toEqual({ code: 0, stdout: `configuration OK (${withRedis})\n`, stderr: '' });
    expect(listen).not.toHaveBeenCalled();
    expect(connect).not.toHaveBeenCalled();
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it('checks the embedded default when no file is named', async () => {
    expect(await runGatehouse(['check-config'])).toEqual({
      code: 0,
      stdout: expect.stringMatching(/^configuration OK \(.*config\/gatehouse\.yaml\)\n$/),
      stderr: '',
    });
  });
});

describe('a failure at run time', () => {
  it('is one line on stderr and exit code 1', async () => {
    expect(await runGatehouse(['--config', configFile, 'apikeys', 'create', 'ghost'])).toEqual({
      code: 1,
      stdout: '',
      stderr: 'gatehouse: unknown user: ghost\n',
    });
    writeFileSync(join(dir, 'keys.json'), '{not json');
    const result = await runGatehouse(['--config', configFile, 'keys', 'list']);
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(ONE_LINE);
    expect(result.stderr).toContain('not valid JSON');
  });

  it('lists each problem of an invalid users file on a line of its own', async () => {
    writeFileSync(join(dir, 'users.yaml'), 'users:\n  alice: {id: 1}\n  bob: {id: 2}\n');
    const result = await runGatehouse(['--config', configFile, 'users', 'list']);
    expect(result.code).toBe(1);
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line).toMatch(new RegExp(`^gatehouse: invalid users file ${join(dir, 'users.yaml')}: users\\.(alice|bob)`));
  });
});

describe('--version', () => {
  it('prints the package version', async () => {
    expect(await runGatehouse(['--version'])).toEqual({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/), stderr: '' });
  });

  it('prints it after a command too, as the usage says, but not as a word after `--`', async () => {
    for (const argv of [
      ['start', '--version'],
      ['users', 'list', '-v'],
      ['-v', 'start'],
      ['--config', 'no-such-file.yaml', 'check-config', '--version'],
    ]) {
      expect(await runGatehouse(argv), argv.join(' ')).toEqual({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/), stderr: '' });
    }
    const positional = await runGatehouse(['start', '--', '--version']);
    expect(positional.code).toBe(2);
    expect(positional.stdout).toBe('');
  });
});
