// API keys pinned to a DPoP key (issue 26 item 5): a key whose logins must
// carry a proof signed by one client key, so a script's leaked API key, and
// the tokens it would get, are useless without that client's private key.
// An operator's key (users file) and a key a user makes (account API) alike.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/users/api-keys.js';
import { hashPassword } from '../../src/users/passwords.js';
import { writeUsersFile } from '../../src/users/users-file.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, proof, type ClientKey } from '../helpers/dpop.js';
import { jwtPayload, postJson, startTestGateway, TEST_SCRYPT_PARAMS, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';

let gw: TestGateway;
let scriptKey: ClientKey;
let operatorKey: string;
let folder: string | undefined;

const loginUrl = () => `${gw.url}/api/v1/auth/login`;

async function keyLogin(apiKey: string, withKey?: ClientKey): Promise<Response> {
  return postJson(loginUrl(), { username: 'carol', password: apiKey }, withKey ? { dpop: await proof(withKey, 'POST', loginUrl()) } : {});
}

beforeAll(async () => {
  scriptKey = await clientKey('ES256');
  // Carol's users file of her own, with an operator's key pinned to the script's DPoP key.
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-dpop-keys-'));
  const usersFile = join(folder, 'users.yaml');
  const pinned = generateApiKey();
  operatorKey = pinned.key;
  const createdAt = new Date().toISOString();
  await writeUsersFile(usersFile, {
    users: {
      carol: {
        id: crypto.randomUUID(),
        passwordHash: await hashPassword('carol-password-1', TEST_SCRYPT_PARAMS),
        disabled: false,
        createdAt,
        apiKeys: [{ id: pinned.keyId, hash: pinned.hash, createdAt, scope: { dpopJkt: scriptKey.jkt } }],
      },
    },
  });
  gw = await startTestGateway({ config: { identity: { usersFile } } });
});

afterAll(async () => {
  await gw?.close();
  if (folder) await rm(folder, { recursive: true, force: true });
});

describe('an API key pinned to a DPoP key', () => {
  it('logs in with a proof of that key, and its tokens are bound to it', async () => {
    const response = await keyLogin(operatorKey, scriptKey);
    expect(response.status).toBe(200);
    const tokens = (await response.json()) as TokenSetBody;
    expect(tokens.token_type).toBe('DPoP');
    expect(jwtPayload(tokens.refresh_token).cnf).toEqual({ jkt: scriptKey.jkt });
  });

  it('attack: the leaked API key without a proof fails as a wrong key does (401 invalid_grant)', async () => {
    const response = await keyLogin(operatorKey);
    expectDiagnoses(response.status, await response.text(), 401, /^401 \(Unauthorized\) - invalid_grant: invalid user credentials$/);
  });

  it("attack: the leaked API key with the thief's own DPoP key fails the same way", async () => {
    const response = await keyLogin(operatorKey, await clientKey('ES256'));
    expectDiagnoses(response.status, await response.text(), 401, /invalid_grant: invalid user credentials$/);
  });

  it('a user pins a key of their own through the account API; the listing shows the pin', async () => {
    const login = (await (await postJson(loginUrl(), { username: 'carol', password: 'carol-password-1' })).json()) as TokenSetBody;
    const created = await fetch(`${gw.url}/api/v1/account/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${login.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'nightly export', scope: { dpopJkt: scriptKey.jkt } }),
    });
    expect(created.status, await created.clone().text()).toBe(201);
    const { key } = (await created.json()) as { key: string };
    const listing = (await (await fetch(`${gw.url}/api/v1/account/api-keys`, { headers: { authorization: `Bearer ${login.access_token}` } })).json()) as {
      apiKeys: Array<{ label: string; scope: Record<string, unknown> }>;
    };
    expect(listing.apiKeys.find((listed) => listed.label === 'nightly export')?.scope.dpopJkt).toBe(scriptKey.jkt);
    expect((await keyLogin(key)).status).toBe(401);
    expect((await keyLogin(key, scriptKey)).status).toBe(200);
  });

  it('a pin that is not a thumbprint is refused when the key is made', async () => {
    const login = (await (await postJson(loginUrl(), { username: 'carol', password: 'carol-password-1' })).json()) as TokenSetBody;
    const response = await fetch(`${gw.url}/api/v1/account/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${login.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'bad pin', scope: { dpopJkt: 'not-a-thumbprint' } }),
    });
    expectDiagnoses(response.status, await response.text(), 400, /invalid_request/);
  });
});
