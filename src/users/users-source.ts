// Where the local provider's users come from, and where their changes go:
// the users file (the single-instance default) or the store
// (`identity.usersIn: store`, store-users.ts). The provider, the CLI and the
// account page's keys read and change users only through this, so each
// works the same on either.
import type { Logger } from 'pino';
import { watchFile } from '../files/watch-file.js';
import { readUsersFile, writeUsersFile, type UsersFileData } from './users-file.js';

export interface UsersRead {
  data: UsersFileData;
  /** A digest of what was read, told to peers so a divergence is seen; undefined where peers compare the file itself. */
  digest: string | undefined;
}

/** A change of the users: the users as they are now in, the users as they must be out (users-changes.ts makes them). */
export type UsersChange = (data: UsersFileData) => UsersFileData;

export interface UsersSource {
  /** Where the users are, as log lines and listings say it. */
  readonly kind: 'users file' | 'store';
  /** Reads and validates every user; throws (UsersFileError, or the store's failure) when they cannot be taken. */
  read(): Promise<UsersRead>;
  /** One read-change-write, as atomic as the source allows; resolves with the users written. */
  change(change: UsersChange): Promise<UsersFileData>;
  /** Calls `onChange` whenever the users may have changed elsewhere; resolves, once stopped, a change being handled. */
  watch(onChange: () => Promise<unknown>): () => Promise<void>;
}

const WATCH_INTERVAL_MS = 500;

/** The users file: the CLI replaces it by rename, the server polls it (which also notices a file that appears after start). */
export function fileUsersSource(file: string, logger: Logger): UsersSource {
  return {
    kind: 'users file',
    async read() {
      return { data: await readUsersFile(file), digest: undefined };
    },
    async change(change) {
      const data = await readUsersFile(file);
      const next = change(data);
      // A change that changed nothing (the same contents back) writes nothing: watchers are not woken for it.
      if (next !== data) await writeUsersFile(file, next);
      return next;
    },
    watch(onChange) {
      const watch = watchFile(
        file,
        async (current) => {
          if (current.nlink === 0) logger.warn('the users file was removed: nobody can log in until it is back');
          await onChange();
        },
        WATCH_INTERVAL_MS,
      );
      return () => watch.close();
    },
  };
}
