// `gatehouse users …`: manages the accounts in the users file. Each command is
// one read-change-write of the file; a running server picks the change up
// through its file watch.
import { parseArgs } from 'node:util';
import { hashPassword } from '../identity/passwords.js';
import { isApiKeyActive, readUsersFile, writeUsersFile } from '../identity/users-file.js';
import { addUser, assertCanAddUser, changeRole, getUser, removeUser, setDisabled } from '../identity/users-changes.js';
import { unlockUsername } from '../limits/unlock.js';
import { CliError, EXIT_OK, formatTable, runGroup, singlePositional, UsageError, writeLine, type CommandGroup } from './command.js';
import { assertDeclared, canPromptHidden, promptHidden, readAll, writeJson, type CliIo } from './io.js';

export const MIN_PASSWORD_LENGTH = 8;

export const USERS_COMMANDS: CommandGroup<CliIo> = {
  name: 'users',
  subcommands: {
    add: {
      synopsis: 'add NAME [--password-stdin]',
      summary: 'add a user (password prompted, or read from stdin)',
      details: `  The password is asked twice on a terminal, or with --password-stdin read
  from the whole of stdin (one trailing newline is dropped). Passwords have
  at least ${MIN_PASSWORD_LENGTH} characters.`,
      run: add,
    },
    disable: { synopsis: 'disable NAME', summary: "refuse the user's logins and end their sessions for good", run: (rest, io) => changeStatus(rest, io, true) },
    enable: {
      synopsis: 'enable NAME',
      summary: 'let a disabled user log in again (old sessions stay ended)',
      run: (rest, io) => changeStatus(rest, io, false),
    },
    remove: { synopsis: 'remove NAME', summary: 'remove the user and their API keys', run: remove },
    unlock: {
      synopsis: 'unlock NAME',
      summary: 'clear the login throttling of the user (in the configured Redis store)',
      details: `  Clears the user's failure counts and waits on every address. An address
  blocked for failures of its own stays blocked (addressBlockS). With the
  in-memory store the counts live in the gateway process: restart it.`,
      run: unlock,
    },
    roles: {
      synopsis: 'roles NAME add|remove ROLE',
      summary: 'give a user a role, or take one away (route rules: routes[].authorize)',
      details: `  A role given reaches the user's sessions at their next refresh; a role
  taken away stops working at once on every instance that has read the file.
  When the config declares roles (authorization.roles), only those can be
  given (exit 65 lists them); any role can be taken away.`,
      run: roles,
    },
    list: { synopsis: 'list [--json]', summary: 'list users (never a password hash); --json for scripts', run: list },
  },
  notes: `Passwords have at least ${MIN_PASSWORD_LENGTH} characters. A running gateway picks changes up without a restart.`,
};

export async function runUsersCommand(args: string[], io: CliIo): Promise<number> {
  return runGroup(USERS_COMMANDS, args, io);
}

async function add(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { 'password-stdin': { type: 'boolean', default: false } },
    allowPositionals: true,
    strict: true,
  });
  const username = singlePositional(positionals, 'NAME');
  // Refuse a bad or taken name before the operator types a password.
  assertCanAddUser(await readUsersFile(io.usersFile), username);

  const password = await readNewPassword(io, values['password-stdin']);
  const passwordHash = await hashPassword(password);
  // Read again: the file may have changed while the prompt waited.
  const data = addUser(await readUsersFile(io.usersFile), username, passwordHash);
  await writeUsersFile(io.usersFile, data);
  writeLine(io.stdout, `added user ${username} (id ${data.users[username]!.id})`);
  return EXIT_OK;
}

async function readNewPassword(io: CliIo, fromStdin: boolean): Promise<string> {
  let password: string;
  if (fromStdin) {
    password = (await readAll(io.stdin)).replace(/\r?\n$/, '');
  } else if (canPromptHidden(io.stdin)) {
    const [first, second] = await promptHidden(io, ['Password: ', 'Repeat the password: ']);
    if (first !== second) throw new CliError('the passwords do not match');
    password = first!;
  } else {
    throw new UsageError('stdin is not a terminal: to read the password from stdin, pass --password-stdin');
  }
  // Counted in characters (code points), as a person typing them would.
  if (Array.from(password).length < MIN_PASSWORD_LENGTH) {
    throw new CliError(`the password must have at least ${MIN_PASSWORD_LENGTH} characters`);
  }
  return password;
}

async function unlock(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  getUser(await readUsersFile(io.usersFile), username); // a typo is told, not silently "unlocked"
  const url = io.store?.url;
  if (!url || !io.store) throw new CliError("no store.url is configured: throttling lives in the running gateway's memory (restart it to clear)");
  const cleared = await unlockUsername({ ...io.store, url }, username);
  writeLine(io.stdout, `unlocked user ${username} (${cleared} throttling record${cleared === 1 ? '' : 's'} cleared)`);
  return EXIT_OK;
}

async function changeStatus(args: string[], io: CliIo, disabled: boolean): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  const data = await readUsersFile(io.usersFile);
  const status = disabled ? 'disabled' : 'enabled';
  if (getUser(data, username).disabled === disabled) {
    writeLine(io.stdout, `user ${username} is already ${status}`);
    return EXIT_OK;
  }
  await writeUsersFile(io.usersFile, setDisabled(data, username, disabled));
  writeLine(io.stdout, `${status} user ${username}`);
  return EXIT_OK;
}

async function roles(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const [username, action, role, ...extra] = positionals;
  if (username === undefined || (action !== 'add' && action !== 'remove') || role === undefined || extra.length > 0) {
    throw new UsageError('expected NAME add|remove ROLE');
  }
  if (action === 'add') assertDeclared(io, 'roles', [role]);
  const data = await readUsersFile(io.usersFile);
  await writeUsersFile(io.usersFile, changeRole(data, username, role, action === 'add'));
  writeLine(io.stdout, action === 'add' ? `gave ${username} the role ${role}` : `took the role ${role} from ${username}`);
  return EXIT_OK;
}

async function remove(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  const data = await readUsersFile(io.usersFile);
  const keys = getUser(data, username).apiKeys.length;
  await writeUsersFile(io.usersFile, removeUser(data, username));
  writeLine(io.stdout, `removed user ${username} and ${keys} API key${keys === 1 ? '' : 's'}`);
  return EXIT_OK;
}

async function list(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, allowPositionals: false, strict: true });
  const data = await readUsersFile(io.usersFile);
  const users = Object.entries(data.users);
  if (values.json) {
    const listed = users.map(([name, user]) => ({
      name,
      id: user.id,
      status: user.disabled ? 'disabled' : 'enabled',
      roles: user.roles ?? [],
      activeKeys: user.apiKeys.filter(isApiKeyActive).length,
    }));
    writeJson(io, listed);
    return EXIT_OK;
  }
  if (users.length === 0) {
    writeLine(io.stderr, `no users in ${io.usersFile}`);
    return EXIT_OK;
  }
  // Never the password hash nor key hashes: a listing gets pasted into tickets.
  const rows = users.map(([name, user]) => [name, user.id, user.disabled ? 'disabled' : 'enabled', String(user.apiKeys.filter(isApiKeyActive).length)]);
  writeLine(io.stdout, formatTable([['NAME', 'ID', 'STATUS', 'ACTIVE KEYS'], ...rows]));
  return EXIT_OK;
}
