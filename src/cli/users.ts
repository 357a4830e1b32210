// `gatehouse users …`: manages the accounts, in the users file or with
// `identity.usersIn: store` in the store (users-access.ts). Each command is
// one read-change-write; a running server picks the change up through its
// file watch, or every instance at once through the store's announcement.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { hashPassword } from '../users/passwords.js';
import { isApiKeyActive, parseUsersFile, UsersFileError, writeUsersFile } from '../users/users-file.js';
import { addUser, assertCanAddUser, changeRole, getUser, removeUser, setDisabled } from '../users/users-changes.js';
import { resetFactors } from '../users/factor-changes.js';
import { unlockUsername } from '../limits/unlock.js';
import { withConfiguredAudit } from './audit-session.js';
import { CliError, EXIT_OK, formatTable, runGroup, singlePositional, UsageError, writeLine, type CommandGroup } from './command.js';
import { assertDeclared, canPromptHidden, promptHidden, readAll, writeJson, type CliIo } from './io.js';
import { withUsers } from './users-access.js';

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
    'reset-factors': {
      synopsis: 'reset-factors NAME',
      summary: "remove the user's second factors (TOTP, recovery codes): the password alone logs in, and they may enrol again",
      details: `  For a user who lost their phone and their recovery codes. Their sessions
  go on; a route asking for two factors (routes[].authorize.acr) refuses them
  until they enrol again on the account page.`,
      run: resetUserFactors,
    },
    list: { synopsis: 'list [--json]', summary: 'list users: status, roles, active API keys (never a hash); --json for scripts', run: list },
    import: {
      synopsis: 'import FILE',
      summary: 'identity.usersIn: store: replace the users in the store by those of a users file',
      details: `  Users the file does not hold are removed from the store (their sessions
  end on every instance); the others are added or replaced as the file has
  them. The file is checked whole first: an invalid one changes nothing.`,
      run: importUsers,
    },
    export: {
      synopsis: 'export FILE',
      summary: 'identity.usersIn: store: write the users in the store to a users file (mode 600)',
      details: `  The file holds password hashes and API key digests, as the users file
  does: keep it as you keep that. It can be imported again, or used as the
  users file of a gateway without Redis.`,
      run: exportUsers,
    },
  },
  notes: `Passwords have at least ${MIN_PASSWORD_LENGTH} characters. A running gateway picks changes up without a restart.
With identity.usersIn: store the commands work on the users in Redis (no users file is needed), from any host with
the config; a gateway's first start seeds a store never seeded from the users file, if that file exists.`,
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
  return withUsers(io, async (users) => {
    // Refuse a bad or taken name before the operator types a password.
    assertCanAddUser(await users.read(), username);

    const password = await readNewPassword(io, values['password-stdin']);
    const passwordHash = await hashPassword(password);
    // Read again: the users may have changed while the prompt waited.
    const data = await users.change((current) => addUser(current, username, passwordHash));
    writeLine(io.stdout, `added user ${username} (id ${data.users[username]!.id})`);
    return EXIT_OK;
  });
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
  await withUsers(io, async (users) => getUser(await users.read(), username)); // a typo is told, not silently "unlocked"
  const url = io.store?.url;
  if (!url || !io.store) throw new CliError("no store.url is configured: throttling lives in the running gateway's memory (restart it to clear)");
  const cleared = await withConfiguredAudit(io, io, async ({ recorder, actor }) => {
    const count = await unlockUsername({ ...io.store!, url }, username);
    recorder.record({ kind: 'lockout.cleared', actor, subject: username, outcome: 'ok', details: { records: count } });
    return count;
  });
  writeLine(io.stdout, `unlocked user ${username} (${cleared} throttling record${cleared === 1 ? '' : 's'} cleared)`);
  return EXIT_OK;
}

async function changeStatus(args: string[], io: CliIo, disabled: boolean): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  const status = disabled ? 'disabled' : 'enabled';
  return withUsers(io, async (users) => {
    let already = false;
    await users.change((data) => {
      already = getUser(data, username).disabled === disabled;
      return already ? data : setDisabled(data, username, disabled);
    });
    writeLine(io.stdout, already ? `user ${username} is already ${status}` : `${status} user ${username}`);
    return EXIT_OK;
  });
}

async function resetUserFactors(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  await withUsers(io, (users) => users.change((data) => resetFactors(data, username)));
  writeLine(io.stdout, `removed the second factors of ${username}`);
  return EXIT_OK;
}

async function roles(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const [username, action, role, ...extra] = positionals;
  if (username === undefined || (action !== 'add' && action !== 'remove') || role === undefined || extra.length > 0) {
    throw new UsageError('expected NAME add|remove ROLE');
  }
  if (action === 'add') assertDeclared(io, 'roles', [role]);
  await withUsers(io, (users) => users.change((data) => changeRole(data, username, role, action === 'add')));
  writeLine(io.stdout, action === 'add' ? `gave ${username} the role ${role}` : `took the role ${role} from ${username}`);
  return EXIT_OK;
}

async function remove(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const username = singlePositional(positionals, 'NAME');
  let keys = 0;
  await withUsers(io, (users) =>
    users.change((data) => {
      keys = getUser(data, username).apiKeys.length;
      return removeUser(data, username);
    }),
  );
  writeLine(io.stdout, `removed user ${username} and ${keys} API key${keys === 1 ? '' : 's'}`);
  return EXIT_OK;
}

async function list(args: string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, allowPositionals: false, strict: true });
  const { data, where } = await withUsers(io, async (access) => ({ data: await access.read(), where: access.where }));
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
    writeLine(io.stderr, `no users in ${where}`);
    return EXIT_OK;
  }
  // Never the password hash nor key hashes: a listing gets pasted into tickets. `-`: no roles (a column is never blank).
  const rows = users.map(([name, user]) => [
    name,
    user.id,
    user.disabled ? 'disabled' : 'enabled',
    user.roles?.length ? user.roles.join(',') : '-',
    String(user.apiKeys.filter(isApiKeyActive).length),
  ]);
  writeLine(io.stdout, formatTable([['NAME', 'ID', 'STATUS', 'ROLES', 'ACTIVE KEYS'], ...rows]));
  return EXIT_OK;
}

async function importUsers(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const file = singlePositional(positionals, 'FILE');
  requireStore(io, 'import');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    // Never "imported 0 users" for a mistyped path: that would remove every user.
    throw new UsersFileError(file, [`cannot read the file: ${(error as NodeJS.ErrnoException).code ?? String(error)}`]);
  }
  const data = parseUsersFile(text, file);
  const counts = await withUsers(io, (users) => users.store!.replaceAll(data));
  const total = Object.keys(data.users).length;
  writeLine(
    io.stdout,
    `imported ${total} user${total === 1 ? '' : 's'} into the store (${counts.added} added, ${counts.changed} changed, ${counts.removed} removed)`,
  );
  return EXIT_OK;
}

async function exportUsers(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const file = singlePositional(positionals, 'FILE');
  requireStore(io, 'export');
  const data = await withUsers(io, (users) => users.read());
  await writeUsersFile(file, data);
  const total = Object.keys(data.users).length;
  writeLine(io.stdout, `exported ${total} user${total === 1 ? '' : 's'} to ${file}`);
  return EXIT_OK;
}

/** Import and export move users between a file and the store; with the users file as the source there is nothing to move. */
function requireStore(io: CliIo, command: 'import' | 'export'): void {
  if (io.usersIn !== 'store') {
    throw new CliError(`users ${command} needs identity.usersIn: store: the users file (${io.usersFile}) is where the users are already`);
  }
}
