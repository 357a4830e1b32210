// The account page among several identity providers (`identity.provider:
// several`) whose default is an OpenID Provider: the page is the local users'
// own, so its login names the local provider (real Chromium, a real
// oidc-provider as the default) and says which one; without a local provider
// there is no account page at all.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { postJson, startTestGateway, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';

let browser: TestBrowser;
let dir: string;
let staff: TestOpenIdProvider;
let withLocal: TestGateway;
let withoutLocal: TestGateway;

const ALICE = { username: 'alice', password: 'alice-password-1' } as const;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-page-providers-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: ALICE.username, password: ALICE.password, roles: ['reader'] }]);
  // The OpenID Provider knows an alice too, with another password: a login sent to the default reaches her, not the local one.
  staff = await startOpenIdProvider({ [ALICE.username]: { password: 'staff-alice-password-1', roles: ['staff'] } });
  const staffEntry = { name: 'staff', type: 'oidc', issuer: staff.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE };
  withLocal = await startTestGateway({
    config: {
      identity: {
        provider: 'several',
        defaultProvider: 'staff',
        providers: [staffEntry, { name: 'break-glass', type: 'local', usersFile: join(dir, 'users.yaml') }],
      },
      tokens: { keysFile: join(dir, 'keys.json') },
      authorization: { roles: ['reader', 'staff'] },
    },
  });
  withoutLocal = await startTestGateway({ config: { identity: { provider: 'several', providers: [staffEntry] }, authorization: { roles: ['staff'] } } });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([withLocal?.close(), withoutLocal?.close()]);
  await staff?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('the account page among several providers, the default an OpenID Provider', () => {
  it('logs a local user in at the local provider by name, whatever the default, and says which provider that is', async () => {
    // What the page must not do: a login naming no provider goes to the default, where the local password is wrong.
    expect((await postJson(`${withLocal.url}/api/v1/auth/login`, ALICE)).status).toBe(401);
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${withLocal.url}/account`);
      await page.locator('#login-provider').waitFor({ state: 'visible' });
      expect(await page.locator('#login-provider-name').textContent()).toBe('break-glass');
      const login = page.waitForRequest((request) => request.url().endsWith('/api/v1/auth/login'));
      await page.getByLabel('Username').fill(ALICE.username);
      await page.getByLabel('Password', { exact: true }).fill(ALICE.password);
      await page.getByRole('button', { name: 'Log in' }).click();
      expect((await login).postDataJSON()).toMatchObject({ username: ALICE.username, provider: 'break-glass' });
      await page.locator('#account').waitFor({ state: 'visible' });
      expect(await page.locator('#username').textContent()).toBe(ALICE.username);
    } finally {
      await page.close();
    }
  });

  it("refuses the OpenID Provider's user in the page: the account is the local users' only", async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${withLocal.url}/account`);
      await page.locator('#login-provider').waitFor({ state: 'visible' });
      await page.getByLabel('Username').fill(ALICE.username);
      await page.getByLabel('Password', { exact: true }).fill('staff-alice-password-1');
      await page.getByRole('button', { name: 'Log in' }).click();
      await expect.poll(() => page.locator('#login-error').textContent()).toBe('Wrong username or password.');
      expect(await page.locator('#account').isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('serves no account page, and no account API, when no provider is local', async () => {
    for (const path of ['/account', '/account/login.json', '/account/account.js']) {
      const response = await fetch(`${withoutLocal.url}${path}`);
      await response.arrayBuffer();
      expect(response.status, path).toBe(404);
    }
    const api = await fetch(`${withoutLocal.url}/api/v1/account`);
    await api.arrayBuffer();
    expect(api.status).toBe(404);
  });
});

describe('the account page with one local provider', () => {
  it('names no provider: its login settings are empty', async () => {
    const single = await startTestGateway({
      config: { identity: { usersFile: join(dir, 'users.yaml') }, tokens: { keysFile: join(dir, 'keys.json') }, authorization: { roles: ['reader'] } },
    });
    try {
      const response = await fetch(`${single.url}/account/login.json`);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(await response.json()).toEqual({});
    } finally {
      await single.close();
    }
  });
});
