import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/io.js';
import { runApiKeysCommand } from '../../src/cli/apikeys.js';
import { runUsersCommand } from '../../src/cli/users.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { verifyPassword } from '../../src/users/passwords.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { runCommand, type CliRun } from '../helpers/cli.js';

let dir: string;
let usersFile: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-users-cli-'));
  usersFile = join(dir, 'users.yaml');
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface FakeTty extends PassThrough {
  isTTY: boolean;
  rawModes: boolean[];
  setRawMode(mode: boolean): FakeTty;
}

/** A terminal as far as the CLI can tell: isTTY and a raw mode switch (echo off) that records its calls. */
function fakeTty(): FakeTty {
  const tty = new PassThrough() as FakeTty;
  tty.isTTY = true;
  tty.rawModes = [];
  tty.setRawMode = (mode: boolean) => {
    tty.rawModes.push(mode);
    return tty;
  };
  return tty;
}

type Run = CliRun;

function run(command: typeof runUsersCommand, args: string[], stdin: string | CliIo['stdin'] = ''): Promise<Run> {
  return runCommand(command, args, usersFile, stdin);
}

const users = (args: string[], stdin?: string | CliIo['stdin']) => run(runUsersCommand, args, stdin);

async function addUser(name: string, password = `${name}-password-1`): Promise<void> {
  const result = await users(['add', name, '--password-stdin'], `${password}\n`);
  expect(result, result.stderr).toMatchObject({ code: 0 });
}

describe('users add', () => {
  it('adds a user whose password, read from stdin, logs in', async () => {
    const result = await users(['add', 'alice', '--password-stdin'], 'correct horse battery\n');
    expect(result.code).toBe(0);
    const alice = (await readUsersFile(usersFile)).users.alice!;
    expect(result.stdout).toBe(`added user alice (id ${alice.id})\n`);
    expect(alice.disabled).toBe(false);
    expect(alice.passwordHash.startsWith('scrypt$ln=15,r=8,p=1$')).toBe(true);
    await expect(verifyPassword('correct horse battery', alice.passwordHash)).resolves.toBe(true);

    const provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, pino({ level: 'silent' }));
    try {
      await expect(provider.authenticate('alice', 'correct horse battery')).resolves.toMatchObject({ sub: alice.id, method: 'pwd' });
    } finally {
      await provider.close();
    }
  });

  it('strips exactly one trailing newline from stdin', async () => {
    await users(['add', 'lf', '--password-stdin'], 'password-lf\n\n');
    await users(['add', 'crlf', '--password-stdin'], 'password-crlf\r\n');
    await users(['add', 'none', '--password-stdin'], ' password-none ');
    const data = await readUsersFile(usersFile);
    await expect(verifyPassword('password-lf\n', data.users.lf!.passwordHash)).resolves.toBe(true);
    await expect(verifyPassword('password-crlf', data.users.crlf!.passwordHash)).resolves.toBe(true);
    await expect(verifyPassword(' password-none ', data.users.none!.passwordHash)).resolves.toBe(true);
  });

  it('refuses a password shorter than 8 characters, counting characters rather than bytes', async () => {
    const short = await users(['add', 'alice', '--password-stdin'], 'seven77\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toMatch(/at least 8 characters/);
    expect((await readUsersFile(usersFile)).users).toEqual({});
    // Seven characters, fourteen bytes.
    expect((await users(['add', 'alice', '--password-stdin'], 'ééééééé')).code).toBe(1);
    expect((await users(['add', 'alice', '--password-stdin'], 'éééééééé')).code).toBe(0);
  });

  it('refuses to read a password from stdin that is not a terminal without --password-stdin', async () => {
    const result = await users(['add', 'alice'], 'alice-password-1\n');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^gatehouse: stdin is not a terminal.*--password-stdin \(see gatehouse users add --help\)\n$/);
    expect((await readUsersFile(usersFile)).users).toEqual({});
  });

  it('prompts twice on a terminal with echo off', async () => {
    const tty = fakeTty();
    tty.write('tty-passwordX\u007f\rtty-password\r');
    const result = await users(['add', 'alice'], tty);
    expect(result.code, result.stderr).toBe(0);
    expect(tty.rawModes).toEqual([true, false]);
    expect(result.stderr).toBe('Password: \nRepeat the password: \n');
    expect(result.stdout).not.toContain('tty-password');
    const alice = (await readUsersFile(usersFile)).users.alice!;
    await expect(verifyPassword('tty-password', alice.passwordHash)).resolves.toBe(true);
  });

  it('refuses differing answers and a cancelled prompt, restoring the terminal', async () => {
    const mismatch = fakeTty();
    mismatch.write('first-password\r\nsecond-password\r\n');
    const differing = await users(['add', 'alice'], mismatch);
    expect(differing.code).toBe(1);
    expect(differing.stderr).toMatch(/passwords do not match/);
    expect(mismatch.rawModes).toEqual([true, false]);

    const cancelled = fakeTty();
    cancelled.write('half-typ\u0003');
    const result = await users(['add', 'alice'], cancelled);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/cancelled/);
    expect(cancelled.rawModes).toEqual([true, false]);
    expect((await readUsersFile(usersFile)).users).toEqual({});
  });

  it('refuses a taken or invalid name before asking for a password', async () => {
    await addUser('alice');
    const tty = fakeTty();
    const taken = await users(['add', 'alice'], tty);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toBe('gatehouse: user already exists: alice\n');
    expect(tty.rawModes).toEqual([]);
    const invalid = await users(['add', 'has space', '--password-stdin'], 'password-123\n');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/invalid user name/);
  });
});

describe('users disable, enable, remove', () => {
  it('changes the user in the file', async () => {
    await addUser('alice');
    await addUser('bob');
    expect(await users(['disable', 'alice'])).toEqual({ code: 0, stdout: 'disabled user alice\n', stderr: '' });
    expect((await readUsersFile(usersFile)).users.alice!.disabled).toBe(true);
    expect((await users(['disable', 'alice'])).stdout).toBe('user alice is already disabled\n');
    expect(await users(['enable', 'alice'])).toEqual({ code: 0, stdout: 'enabled user alice\n', stderr: '' });
    expect((await readUsersFile(usersFile)).users.alice!.disabled).toBe(false);

    await run(runApiKeysCommand, ['create', 'alice']);
    expect(await users(['remove', 'alice'])).toEqual({ code: 0, stdout: 'removed user alice and 1 API key\n', stderr: '' });
    expect(Object.keys((await readUsersFile(usersFile)).users)).toEqual(['bob']);
  });

  it('fails with exit code 1 on an unknown user', async () => {
    for (const command of ['disable', 'enable', 'remove']) {
      expect(await users([command, 'ghost'])).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: unknown user: ghost\n' });
    }
  });
});

describe('users list', () => {
  it('shows name, id, status, roles and active keys, never a hash', async () => {
    await addUser('alice');
    await addUser('bob');
    await users(['disable', 'bob']);
    await users(['roles', 'alice', 'add', 'reader']);
    await users(['roles', 'alice', 'add', 'auditor']);
    await run(runApiKeysCommand, ['create', 'alice']);
    await run(runApiKeysCommand, ['create', 'alice']);
    const revoked = (await readUsersFile(usersFile)).users.alice!.apiKeys[0]!.id;
    await run(runApiKeysCommand, ['revoke', revoked]);

    const data = await readUsersFile(usersFile);
    const result = await users(['list']);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME\s+ID\s+STATUS\s+ROLES\s+ACTIVE KEYS$/);
    expect(lines[1]).toMatch(new RegExp(`^alice\\s+${data.users.alice!.id}\\s+enabled\\s+auditor,reader\\s+1$`));
    expect(lines[2]).toMatch(new RegExp(`^bob\\s+${data.users.bob!.id}\\s+disabled\\s+-\\s+0$`));
    expect(lines).toHaveLength(3);
    const everything = result.stdout + result.stderr;
    expect(everything).not.toContain('scrypt');
    for (const user of Object.values(data.users)) {
      expect(everything).not.toContain(user.passwordHash.split('$')[3]);
      for (const key of user.apiKeys) expect(everything).not.toContain(key.hash);
    }
  });

  it('says when there are no users', async () => {
    expect(await users(['list'])).toEqual({ code: 0, stdout: '', stderr: `no users in ${usersFile}\n` });
  });

  it('fails with exit code 1, naming the file, when the file is invalid', async () => {
    await writeFile(usersFile, 'users:\n  alice: 3\n');
    const result = await users(['list']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`invalid users file ${usersFile}`);
    expect(result.stderr).toContain('users.alice:');
  });
});

describe('usage', () => {
  it('answers bad usage with one line on stderr, pointing to the usage, and exit code 2', async () => {
    const cases = [
      [],
      ['frobnicate'],
      ['add'],
      ['add', 'alice', 'bob', '--password-stdin'],
      ['add', 'alice', '--pasword-stdin'],
      ['disable'],
      ['remove', 'a', 'b'],
      ['list', 'extra'],
      ['list', '--all'],
    ];
    for (const args of cases) {
      const result = await users(args, 'alice-password-1\n');
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^gatehouse: [^\n]+ \(see gatehouse users( [a-z]+)? --help\)\n$/);
    }
    expect(await readFile(usersFile, 'utf8').catch(() => 'absent')).toBe('absent');
  });

  it('prints the usage on stdout when asked', async () => {
    const result = await users(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^usage: gatehouse users add NAME \[--password-stdin\]/);
    expect(result.stdout).toMatch(/at least 8 characters/);
  });

  it("prints a subcommand's own usage for its --help, and does nothing else", async () => {
    for (const command of ['add', 'disable', 'enable', 'remove', 'list']) {
      const result = await users([command, 'alice', '--help']);
      expect(result, command).toMatchObject({ code: 0, stderr: '' });
      expect(result.stdout).toMatch(new RegExp(`^usage: gatehouse users ${command}\\b`));
    }
    expect(await readFile(usersFile, 'utf8').catch(() => 'absent')).toBe('absent');
  });
});
