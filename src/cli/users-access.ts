// Where the `users` and `apikeys` commands find the users: the users file,
// or with `identity.usersIn: store` the store, reached from whichever host the
// command runs on. In the store, a change is one compare-and-set announced
// to every running gateway, which all read the users again at once. A
// command only reads and changes the users: seeding a new store, and marking
// one that lost its users, are the gateways' (users/store-users.ts).
import { pino } from 'pino';
import { StoreUsers } from '../users/store-users.js';
import type { UsersFileData } from '../users/users-file.js';
import { fileUsersSource, type UsersChange } from '../users/users-source.js';
import { recordedChange } from '../users/users-audit.js';
import { withCommandAudit, withConfiguredAudit } from './audit-session.js';
import { CliError, writeLine } from './command.js';
import type { CliIo } from './io.js';
import { withStore } from './store-session.js';

export interface UsersAccess {
  /** Where the users are, as messages name it: the users file's path, or "the store". */
  readonly where: string;
  read(): Promise<UsersFileData>;
  change(change: UsersChange): Promise<UsersFileData>;
  /** The store's users (`usersIn: store`); undefined for the users file. */
  readonly store: StoreUsers | undefined;
}

/** Runs `use` with the users where the config keeps them; a store opened for it is closed afterwards. */
export async function withUsers<T>(io: CliIo, use: (users: UsersAccess) => Promise<T>): Promise<T> {
  const silent = pino({ enabled: false });
  if (io.usersIn !== 'store') {
    const file = fileUsersSource(io.usersFile, silent);
    // The trail is the store's when there is one, even with the users in the file: opened for a change only.
    const change = (c: UsersChange) => withConfiguredAudit(io, io, (audit) => recordedChange((next) => file.change(next), c, audit));
    return use({ where: io.usersFile, read: async () => (await file.read()).data, change, store: undefined });
  }
  if (!io.store?.url) throw new CliError('identity.usersIn is store, but no store.url is configured');
  return withStore(io.store, 'the users live there (identity.usersIn: store)', async (store) => {
    const users = new StoreUsers({ records: store.users!, onFeedResumed: () => () => {}, logger: silent });
    // A command never seeds the store (a gateway's first start does) and never marks it: it tells what it found.
    const { records, marker } = await store.users!.state();
    if (marker === 'lost') {
      writeLine(io.stderr, 'the users held in the store were lost (Redis lost its data): restore them with `gatehouse users import <an export>`');
    } else if (marker === null && records.size === 0) {
      writeLine(io.stderr, `the store was never seeded: a gateway's first start reads ${io.usersFile} into it if that file exists (no file is needed)`);
    }
    return withCommandAudit(io, io.audit, store, (audit) =>
      use({
        where: 'the store',
        read: async () => (await users.read()).data,
        change: (change) => recordedChange((c) => users.change(c), change, audit),
        store: users,
      }),
    );
  });
}
