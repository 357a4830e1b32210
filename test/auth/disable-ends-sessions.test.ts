// Attack 9 of the abuse review: disabling a user and enabling them later
// brought their old sessions back. A disable now voids every session begun
// before it (the users file keeps `sessionsNotBefore`), checked by the one
// bearer rule on every use, cached tokens included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readUsersFile } from '../../src/users/users-file.js';
import { setDisabled } from '../../src/users/users-changes.js';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { changeUsersFile } from '../helpers/users.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw.close();
});

async function setAliceDisabled(disabled: boolean): Promise<void> {
  await changeUsersFile(gw, setDisabled(await readUsersFile(gw.usersFile), 'alice', disabled));
}

function refresh(token: string): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: token });
}

describe('attack 9: disabling a user ends their sessions', () => {
  it('keeps the sessions from before a disable dead after the user is enabled again; new logins work', async () => {
    const old = await login(gw.url, 'alice', 'alice-password-1');
    // Cached by the bearer rule before the disable: the hit path must refuse it too.
    expect(await gw.gateway.bearer.authenticate(old.access_token)).toMatchObject({ username: 'alice' });
    expect((await refresh(old.refresh_token)).status).toBe(200);

    await setAliceDisabled(true);
    expect((await refresh(old.refresh_token)).status).toBe(400);
    await setAliceDisabled(false);

    expect((await refresh(old.refresh_token)).status).toBe(400);
    expect(() => gw.gateway.bearer.authenticate(old.access_token)).toThrow(/no longer active/);
    const logout = await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${old.access_token}` } });
    expect(logout.status).toBe(401);

    const fresh = await login(gw.url, 'alice', 'alice-password-1');
    expect((await refresh(fresh.refresh_token)).status).toBe(200);
  });
});
