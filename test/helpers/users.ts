// Changing a running gateway's users file the way an operator does (the CLI
// rewrites it; every instance watches it), and waiting for the gateway to
// have taken the change: its identity provider announces every reload.
import type { IdentityProvider } from '../../src/users/identity-provider.js';
import { writeUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import type { TestGateway } from './gateway.js';

/** Resolves at the identity provider's next change. */
export function nextIdentityChange(identity: IdentityProvider): Promise<void> {
  return new Promise((resolve) => {
    const off = identity.onChange(() => {
      off();
      resolve();
    });
  });
}

/** Writes the users file and resolves once the gateway's watcher has read it. */
export async function changeUsersFile(gw: TestGateway, data: UsersFileData): Promise<void> {
  const changed = nextIdentityChange(gw.gateway.identity);
  await writeUsersFile(gw.usersFile, data);
  await changed;
}
