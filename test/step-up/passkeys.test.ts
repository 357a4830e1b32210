// Passkeys in real Chromium with a virtual authenticator (DevTools protocol
// WebAuthn domain, user-verifying, resident keys): a signed-in user registers
// one through the account API from the account page's origin, logs out, and
// logs in with the passkey alone; that token (amr hwk+user, acr mfa) passes a
// route requiring mfa. Two instances on one real redis-server with the users
// in the store: the challenge issued by A is taken on B. Named attacks: a
// challenge used twice, an assertion a page of another origin obtained, and a
// challenge never issued are refused, and audited. `gatehouse users reset-factors` removes
// the passkeys too. The account page adds one and logs in with it.
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import type { CDPSession, Page } from 'playwright-core';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { nextIdentityChange } from '../helpers/users.js';

const MFA = 'urn:gatehouse:acr:mfa';
const USERS = [{ name: 'alice', password: 'alice-password-1' }];

let browser: TestBrowser;
let redis: { url: string; close(): Promise<void> };
let upstream: Upstream;
let a: TestGateway;
let b: TestGateway;
let page: Page;
let pageCdp: CDPSession;
let pageAuthenticator: string;
/** The account page's origin, as the browser sees it: `localhost` is a valid relying party id, an IP address is not. */
let origin: string;

beforeAll(async () => {
  redis = await testRedisUrl();
  upstream = await startUpstream();
  const keyPrefix = uniquePrefix();
  const portA = await freePort();
  origin = `http://localhost:${portA}`;
  const config = {
    store: { url: redis.url, keyPrefix },
    identity: { usersIn: 'store', usersRereadS: 3600 },
    account: { passkeys: { origin } },
    routes: [{ name: 'payments', prefix: '/payments', upstreams: [upstream.url], authorize: { acr: [MFA] } }],
  };
  a = await startTestGateway({ users: USERS, config, port: portA });
  b = await startTestGateway({ users: USERS, config });
  browser = await launchBrowser();
  page = await browser.browser.newPage();
  pageCdp = await page.context().newCDPSession(page);
  pageAuthenticator = await addAuthenticator(pageCdp);
  await page.goto(`${origin}/account`);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([a?.close(), b?.close()]);
  await upstream?.close();
  await redis?.close();
});

type Json = Record<string, unknown>;

/** A user-verifying platform authenticator holding resident keys, as a phone or a laptop's is. */
async function addAuthenticator(cdp: CDPSession): Promise<string> {
  await cdp.send('WebAuthn.enable');
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true },
  });
  return authenticatorId;
}

/**
 * The page's own WebAuthn calls (the JSON forms of WebAuthn Level 3): options
 * in, the credential out, serialised as the browser does. Written as page
 * source: the tests compile without the DOM's types.
 */
function inBrowser(target: Page, call: 'create' | 'get', options: Json): Promise<Json> {
  const parse = call === 'create' ? 'parseCreationOptionsFromJSON' : 'parseRequestOptionsFromJSON';
  return target.evaluate(
    `(async () => {
      const publicKey = PublicKeyCredential.${parse}(${JSON.stringify(options)});
      return (await navigator.credentials.${call}({ publicKey })).toJSON();
    })()`,
  ) as Promise<Json>;
}

const createInBrowser = (target: Page, options: Json) => inBrowser(target, 'create', options);
const getInBrowser = (target: Page, options: Json) => inBrowser(target, 'get', options);

async function loginOptions(url: string): Promise<Json> {
  const response = await postJson(`${url}/api/v1/auth/passkey/options`, {});
  expect(response.status).toBe(200);
  return (await response.json()) as Json;
}

async function registerPasskey(): Promise<void> {
  const { access_token } = await login(a.url, 'alice', 'alice-password-1');
  const headers = { authorization: `Bearer ${access_token}` };
  const options = (await (await postJson(`${a.url}/api/v1/account/factors/passkeys/options`, {}, headers)).json()) as Json;
  const credential = await createInBrowser(page, options);
  const heardOnB = nextIdentityChange(b.gateway.identity);
  const registered = await postJson(`${a.url}/api/v1/account/factors/passkeys`, credential, headers);
  expect(registered.status).toBe(201);
  expect(await registered.json()).toEqual({ passkeys: 1 });
  await heardOnB;
  expect((await postJson(`${a.url}/api/v1/auth/logout`, {}, headers)).status).toBe(204);
}

describe('passkeys', () => {
  beforeAll(registerPasskey);

  it('log in without a password: amr hwk and user, acr mfa, and a route requiring mfa takes the token', async () => {
    const assertion = await getInBrowser(page, await loginOptions(a.url));
    // Issued on A, taken on B: the challenge lives in the store, the passkey with the users.
    const response = await postJson(`${b.url}/api/v1/auth/passkey`, assertion);
    expect(response.status).toBe(200);
    const tokens = (await response.json()) as TokenSetBody;
    const claims = jwtPayload(tokens.access_token);
    expect(claims.amr).toEqual(['hwk', 'user']);
    expect(claims.acr).toBe(MFA);
    expect(claims.preferred_username).toBe('alice');
    // In the audit trail as a passkey login, of the session the token names.
    const audited = b.logs.entries().filter((line) => line.event === 'audit' && line.method === 'passkey');
    expect(audited).toEqual([expect.objectContaining({ outcome: 'success', username: 'alice', sub: claims.sub, sid: claims.sid })]);
    const paid = await fetch(`${b.url}/payments/1`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(paid.status).toBe(200);

    const { access_token: passwordOnly } = await login(b.url, 'alice', 'alice-password-1');
    expect((await fetch(`${b.url}/payments/1`, { headers: { authorization: `Bearer ${passwordOnly}` } })).status).toBe(401);
  });

  it('step up a password login as its second factor: same sid, amr pwd then hwk and user, acr mfa', async () => {
    const { access_token } = await login(a.url, 'alice', 'alice-password-1');
    const assertion = await getInBrowser(page, await loginOptions(a.url));
    const response = await postJson(`${a.url}/api/v1/auth/passkey`, assertion, { authorization: `Bearer ${access_token}` });
    expect(response.status).toBe(200);
    const stepped = jwtPayload(((await response.json()) as TokenSetBody).access_token);
    expect(stepped.sid).toBe(jwtPayload(access_token).sid);
    expect(stepped.amr).toEqual(['pwd', 'hwk', 'user']);
    expect(stepped.acr).toBe(MFA);
  });

  it('attack: a challenge used twice is refused, even signed afresh', async () => {
    const options = await loginOptions(a.url);
    const first = await getInBrowser(page, options);
    const second = await getInBrowser(page, options);
    expect((await postJson(`${a.url}/api/v1/auth/passkey`, first)).status).toBe(200);
    const again = await postJson(`${b.url}/api/v1/auth/passkey`, second);
    expect(again.status).toBe(400);
    expect(((await again.json()) as { $diagnoses: Array<{ $detail: string }> }).$diagnoses[0]!.$detail).toBe(
      '400 (Bad Request) - invalid_grant: passkey answer refused',
    );
  });

  it('attack: an assertion obtained by a page of another origin is refused', async () => {
    // B's own page is another origin (another port) of the same host: the key signs there, the relying party refuses it.
    const elsewhere = await browser.browser.newPage();
    try {
      const cdp = await elsewhere.context().newCDPSession(elsewhere);
      const authenticatorId = await addAuthenticator(cdp);
      await elsewhere.goto(`${b.url.replace('127.0.0.1', 'localhost')}/account`);
      // The same key (its credential copied to this page's authenticator) answers A's challenge from B's origin.
      const { credentials } = await pageCdp.send('WebAuthn.getCredentials', { authenticatorId: pageAuthenticator });
      await cdp.send('WebAuthn.addCredential', { authenticatorId, credential: credentials[0]! });
      const assertion = await getInBrowser(elsewhere, await loginOptions(a.url));
      expect((await postJson(`${a.url}/api/v1/auth/passkey`, assertion)).status).toBe(400);
    } finally {
      await elsewhere.close();
    }
  });

  it('attack: a challenge the gateway never issued is refused', async () => {
    const forged = { challenge: Buffer.from('never issued by the gateway!').toString('base64url'), rpId: 'localhost', userVerification: 'required' };
    const assertion = await getInBrowser(page, forged);
    const refusals = () => a.logs.entries().filter((line) => line.event === 'audit' && line.method === 'passkey' && line.outcome === 'failure').length;
    const before = refusals();
    expect((await postJson(`${a.url}/api/v1/auth/passkey`, assertion)).status).toBe(400);
    // Audited, and counted against the address like a forged refresh token (test/auth/login-guard.test.ts).
    expect(refusals()).toBe(before + 1);
  });

  it('`gatehouse users reset-factors` removes the passkeys: a login with one is refused on every instance', async () => {
    const stdout = new PassThrough();
    const heardOnB = nextIdentityChange(b.gateway.identity);
    const io = { usersFile: a.usersFile, usersIn: 'store' as const, store: a.config.store, stdin: new PassThrough(), stdout, stderr: new PassThrough() };
    expect(await runUsersCommand(['reset-factors', 'alice'], io)).toBe(0);
    expect(String(stdout.read())).toContain('removed the second factors of alice');
    await heardOnB;
    const assertion = await getInBrowser(page, await loginOptions(a.url));
    expect((await postJson(`${b.url}/api/v1/auth/passkey`, assertion)).status).toBe(400);
  });

  it('on the account page: log in with the password, add a passkey, log out, log in with the passkey alone', async () => {
    await page.goto(`${origin}/account`);
    await page.locator('#login-username').fill('alice');
    await page.locator('#login-password').fill('alice-password-1');
    await page.locator('#login-password').press('Enter');
    await page.locator('#account').waitFor({ state: 'visible' });
    await page.locator('#add-passkey').click();
    await expect.poll(() => page.locator('#passkeys-count').textContent()).toBe('You have 1 passkey.');
    await page.locator('#logout').click();
    await page.locator('#login').waitFor({ state: 'visible' });
    await page.locator('#passkey-login').click();
    await page.locator('#account').waitFor({ state: 'visible' });
    expect(await page.locator('#username').textContent()).toBe('alice');
  });
});
