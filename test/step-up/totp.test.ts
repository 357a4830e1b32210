// TOTP for local users, end to end through a real gateway: enrolment on the
// account API (secret, QR code, confirmed by a first code), a login sending
// the code beside the password, a code used twice refused, recovery codes,
// `gatehouse users reset-factors`, and wrong codes throttled as passwords are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import { totpCodeAt, TOTP_PERIOD_S } from '../../src/factors/totp-codes.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { runCommand } from '../helpers/cli.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { nextIdentityChange } from '../helpers/users.js';

const USERS = [
  { name: 'alice', password: 'alice-password-1' },
  { name: 'carol', password: 'carol-password-1' },
  { name: 'dave', password: 'dave-password-1' },
];

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ users: USERS, config: { limits: { login: { freeFailures: 3, firstWaitS: 60 } } } });
});
afterAll(async () => {
  await gw?.close();
});

function account(path: string, token: string, body?: unknown): Promise<Response> {
  return fetch(`${gw.url}/api/v1/account/factors${path}`, {
    method: body === undefined && path === '' ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

/** Enrols `name` through the account API; the secret and the recovery codes. */
async function enrol(name: string, password: string): Promise<{ secret: string; recoveryCodes: string[] }> {
  const { access_token } = await login(gw.url, name, password);
  const started = await account('/totp', access_token);
  expect(started.status).toBe(201);
  const { secret, uri, qrCodeSvg } = (await started.json()) as { secret: string; uri: string; qrCodeSvg: string };
  expect(uri).toBe(`otpauth://totp/Gatehouse:${name}?issuer=Gatehouse&secret=${secret}&algorithm=SHA1&digits=6&period=30`);
  expect(qrCodeSvg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  // A wrong first code confirms nothing.
  const wrong = await account('/totp/confirm', access_token, { code: totpCodeAt(secret, Date.now() - 10 * TOTP_PERIOD_S * 1000) });
  expect(wrong.status).toBe(400);
  expect(await (await account('', access_token)).json()).toMatchObject({ totpPending: true });
  const confirmed = await account('/totp/confirm', access_token, { code: totpCodeAt(secret, Date.now()) });
  expect(confirmed.status).toBe(200);
  const { recoveryCodes } = (await confirmed.json()) as { recoveryCodes: string[] };
  expect(await (await account('', access_token)).json()).toEqual({ totp: true, totpPending: false, recoveryCodesLeft: 10, passkeys: 0 });
  return { secret, recoveryCodes };
}

async function loginWith(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/login`, body, headers);
}

describe('enrolment', () => {
  it('keeps the confirmed secret and only digests of the recovery codes where the users live', async () => {
    const { secret, recoveryCodes } = await enrol('alice', 'alice-password-1');
    expect(recoveryCodes).toHaveLength(10);
    for (const code of recoveryCodes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    const stored = (await readUsersFile(gw.usersFile)).users.alice!.factors!;
    expect(stored.totp?.secret).toBe(secret);
    expect(stored.totpPending).toBeUndefined();
    expect(JSON.stringify(stored)).not.toContain(recoveryCodes[0]);
  });
});

describe('a login with a second factor', () => {
  it('sends the code beside the password and gets an mfa token; the same code again is refused', async () => {
    const { secret } = await enrol('carol', 'carol-password-1');
    // The code of the step before still counts (clocks drift); it has not been used.
    const code = totpCodeAt(secret, Date.now() - TOTP_PERIOD_S * 1000);
    const first = await loginWith({ username: 'carol', password: 'carol-password-1', otp: code });
    expect(first.status).toBe(200);
    const tokens = (await first.json()) as TokenSetBody;
    expect(jwtPayload(tokens.access_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: 'urn:gatehouse:acr:mfa' });
    const again = await loginWith({ username: 'carol', password: 'carol-password-1', otp: code });
    expect(again.status).toBe(401);
    expect(await again.text()).toContain('invalid user credentials');
  });

  it('takes a recovery code once', async () => {
    const { recoveryCodes } = await enrol('dave', 'dave-password-1');
    const code = recoveryCodes[3]!.toUpperCase();
    expect((await loginWith({ username: 'dave', password: 'dave-password-1', otp: code })).status).toBe(200);
    expect((await loginWith({ username: 'dave', password: 'dave-password-1', otp: code })).status).toBe(401);
    expect((await readUsersFile(gw.usersFile)).users.dave!.factors!.recoveryCodes).toHaveLength(9);
  });

  it('refuses a login that asks for mfa and sends no code, before the password is checked', async () => {
    const response = await loginWith({ username: 'carol', password: 'not-her-password', acr_values: 'urn:gatehouse:acr:mfa' });
    expect(response.status).toBe(401);
    expect(await response.text()).toContain(
      "this login reaches urn:gatehouse:acr:password, not one of urn:gatehouse:acr:mfa: send the second factor's code in `otp`",
    );
  });

  it('`gatehouse users reset-factors` removes them: the code is refused, the password alone logs in', async () => {
    const { secret } = await enrol('alice', 'alice-password-1');
    const changed = nextIdentityChange(gw.gateway.identity);
    const result = await runCommand(runUsersCommand, ['reset-factors', 'alice'], gw.usersFile);
    expect(result.stdout.trim()).toBe('removed the second factors of alice');
    await changed;
    expect((await loginWith({ username: 'alice', password: 'alice-password-1', otp: totpCodeAt(secret, Date.now()) })).status).toBe(401);
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    expect(jwtPayload(tokens.access_token).acr).toBe('urn:gatehouse:acr:password');
  });
});

describe('throttling', () => {
  it('counts wrong codes as wrong passwords: past the free failures even the right code waits', async () => {
    const { secret } = await enrol('alice', 'alice-password-1');
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 4; attempt += 1) {
      statuses.push((await loginWith({ username: 'alice', password: 'alice-password-1', otp: '000000' })).status);
    }
    // Three free failures, then one that starts the wait (answered as the refusal it is).
    expect(statuses).toEqual([401, 401, 401, 401]);
    const right = await loginWith({ username: 'alice', password: 'alice-password-1', otp: totpCodeAt(secret, Date.now()) });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
