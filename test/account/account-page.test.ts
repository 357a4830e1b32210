// The account page in a real browser (headless Chromium): log in, make a key
// and read its secret once, use it, revoke it in the page, and see the
// revocation on a second gateway instance sharing Redis. Also what the page
// promises: its own words for a wrong password and for a session that ended,
// the product's name and icon, tokens in memory only (a reload asks to log in
// again), renewal before expiry, a strict CSP, the keyboard, and text that
// fits (wraps, never cut) at a phone's and a desktop's width. A screenshot is
// kept for reviewers (docs/account-page.png is one).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT_PAGE_CSP } from '../../src/account/account-page.js';
import { ARTIFACTS_DIR, launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { jwtPayload, postJson, startTestGateway, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

let browser: TestBrowser;
let redis: { url: string; close(): Promise<void> };
let dir: string;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  redis = await testRedisUrl();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-page-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1', roles: ['reader'], apiKeys: 1 }]);
  const keyPrefix = uniquePrefix();
  const instance = () =>
    startTestGateway({
      config: {
        store: { url: redis.url, keyPrefix },
        identity: { usersFile: join(dir, 'users.yaml') },
        // Short-lived access tokens: the page must renew them while it is open.
        tokens: { keysFile: join(dir, 'keys.json'), accessTokenTtlS: 12 },
        authorization: { roles: ['reader'] },
      },
    });
  [a, b] = [await instance(), await instance()];
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([a?.close(), b?.close()]);
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

/** Logs in with the keyboard only: type, Tab, type, Enter. */
async function logInByKeyboard(page: Page, password: string): Promise<void> {
  await page.locator('#login-username').focus();
  await page.keyboard.type('alice');
  await page.keyboard.press('Tab');
  await page.keyboard.type(password);
  await page.keyboard.press('Enter');
}

describe('the account page', () => {
  it('is served with a strict Content-Security-Policy and no inline script or style', async () => {
    const response = await fetch(`${a.url}/account`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-security-policy')).toBe(ACCOUNT_PAGE_CSP);
    expect(ACCOUNT_PAGE_CSP).not.toMatch(/unsafe-inline|unsafe-eval/);
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await response.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|<style/);
    expect(html).not.toMatch(/\son[a-z]+=/);
  });

  it('says "Wrong username or password." for a wrong password, in its own words rather than the API\'s', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'not-the-password');
      await expect.poll(() => page.locator('#login-error').textContent()).toBe('Wrong username or password.');
      expect(await page.locator('#account').isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('makes a key shown once, which logs in on another instance until it is revoked in the page', async () => {
    const page = await browser.browser.newPage({ viewport: { width: 1280, height: 900 } });
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.locator('#account').waitFor({ state: 'visible' });
      expect(await page.locator('#username').textContent()).toBe('alice');

      await page.getByLabel('Label').fill('ci pipeline');
      await page.getByLabel('Expires in (days)').fill('30');
      await page.getByRole('button', { name: 'Create key' }).click();
      const secret = page.locator('#new-key-value');
      await expect.poll(() => secret.inputValue()).toMatch(/^ghk_[0-9a-f]{16}_/);
      const key = await secret.inputValue();
      expect(await page.locator('#new-key').textContent()).toContain('It will not be shown again.');
      await page.getByRole('row', { name: /ci pipeline/ }).waitFor();

      await mkdir(ARTIFACTS_DIR, { recursive: true });
      // Unmasked: a test key of a gateway that is gone when the test ends, so the docs show the box as a user sees it.
      await page.screenshot({ path: join(ARTIFACTS_DIR, 'account-page.png'), fullPage: true });

      // The key works on the other instance at once.
      expect((await postJson(`${b.url}/api/v1/auth/login`, { username: 'alice', password: key })).status).toBe(200);

      // Shown once: gone from the page when the user says it was copied.
      await page.getByRole('button', { name: 'I have copied it' }).click();
      expect(await page.locator('#new-key').isHidden()).toBe(true);
      expect(await secret.inputValue()).toBe('');

      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Revoke key ci pipeline' }).click();
      await page.getByRole('row', { name: /ci pipeline/ }).waitFor({ state: 'detached' });
      const refused = await postJson(`${b.url}/api/v1/auth/login`, { username: 'alice', password: key });
      expect(refused.status).toBe(401);

      // Tokens were never written anywhere a page can keep them.
      expect(await page.evaluate('localStorage.length + sessionStorage.length + document.cookie.length')).toBe(0);
      expect(cspViolations).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('binds its tokens to a DPoP key of its own: a token carried away from the page is refused elsewhere', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      const loggedIn = page.waitForResponse((response) => response.url().endsWith('/api/v1/auth/login'));
      const accountCall = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/account');
      await logInByKeyboard(page, 'alice-password-1');
      const tokenSet = (await (await loggedIn).json()) as { access_token: string; refresh_token: string; token_type: string };
      expect(tokenSet.token_type).toBe('DPoP');
      expect(jwtPayload(tokenSet.refresh_token).cnf).toEqual({ jkt: expect.stringMatching(/^[\w-]{43}$/) });
      // The page proves its key on every call.
      const headers = (await accountCall).headers();
      expect(headers.authorization).toBe(`DPoP ${tokenSet.access_token}`);
      expect(headers.dpop).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
      await page.locator('#account').waitFor({ state: 'visible' });
      // What an injected script could carry away: the tokens, never the key. Replayed from here, they are refused.
      for (const token of [tokenSet.access_token, tokenSet.refresh_token]) {
        const stolen = await fetch(`${a.url}/api/v1/account`, { headers: { authorization: `Bearer ${token}` } });
        expect(stolen.status).toBe(401);
      }
      const replayed = await fetch(`${a.url}/api/v1/account`, { headers: { authorization: headers.authorization!, dpop: headers.dpop! } });
      expect(replayed.status).toBe(401);
    } finally {
      await page.close();
    }
  });

  it('renews the access token with the refresh token before it expires', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.locator('#account').waitFor({ state: 'visible' });
      // expires_in 12 s: renewed 10 s before, so within about 2 s.
      const renewal = await page.waitForResponse((response) => response.url().endsWith('/api/v1/auth/refresh'), { timeout: 15_000 });
      expect(renewal.status()).toBe(200);
      // The renewed token works: the page can still read the keys.
      await page.reload();
      await page.locator('#login').waitFor({ state: 'visible' });
    } finally {
      await page.close();
    }
  });

  it('asks to log in again after a reload: nothing survives it', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.locator('#account').waitFor({ state: 'visible' });
      await page.reload();
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.locator('#account').isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('signs out everywhere: every session of the user ends', async () => {
    const other = (await (await postJson(`${b.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' })).json()) as {
      access_token: string;
    };
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.getByRole('button', { name: 'Sign out everywhere' }).waitFor();
      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Sign out everywhere' }).click();
      await page.locator('#login').waitFor({ state: 'visible' });
      const refused = await fetch(`${b.url}/api/v1/account`, { headers: { authorization: `Bearer ${other.access_token}` } });
      expect(refused.status).toBe(401);
    } finally {
      await page.close();
    }
  });

  it("shows a label that looks like markup as text: a key's label cannot run script in the page", async () => {
    const { access_token } = (await (await postJson(`${a.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' })).json()) as {
      access_token: string;
    };
    const label = '<img src=x onerror="window.pwned=1">';
    const created = await fetch(`${a.url}/api/v1/account/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label }),
    });
    expect(created.status).toBe(201);
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.getByRole('cell', { name: label, exact: true }).waitFor();
      expect(await page.evaluate('window.pwned')).toBeUndefined();
      expect(await page.locator('#keys img').count()).toBe(0);
    } finally {
      await page.close();
    }
  });

  it('carries the product name and an icon, and loads nothing that is missing', async () => {
    const page = await browser.browser.newPage();
    const missing: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) missing.push(`${response.status()} ${response.url()}`);
    });
    try {
      await page.goto(`${a.url}/account`);
      expect(await page.title()).toContain('Gatehouse');
      expect((await page.locator('header .brand').textContent())?.trim()).toBe('Gatehouse');
      const icon = await page.evaluate(`document.querySelector('link[rel="icon"]').href`);
      const served = await fetch(String(icon));
      expect(served.status).toBe(200);
      expect(served.headers.get('content-type')).toBe('image/svg+xml');
      await page.evaluate(`document.querySelector('header .brand img').decode()`);
      expect(missing).toEqual([]);
    } finally {
      await page.close();
    }
  });

  it('says the session is over, in its own words, when it ended elsewhere', async () => {
    const page = await browser.browser.newPage();
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.locator('#account').waitFor({ state: 'visible' });
      const other = (await (await postJson(`${b.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' })).json()) as {
        access_token: string;
      };
      expect((await fetch(`${b.url}/api/v1/account/sessions`, { method: 'DELETE', headers: { authorization: `Bearer ${other.access_token}` } })).status).toBe(
        204,
      );
      await page.getByLabel('Label').fill('too late');
      await page.getByRole('button', { name: 'Create key' }).click();
      await page.locator('#login').waitFor({ state: 'visible' });
      expect(await page.locator('#message').textContent()).toBe('Your session has expired or was ended. Please log in again.');
    } finally {
      await page.close();
    }
  });

  for (const { width, height, isMobile } of [
    { width: 360, height: 740, isMobile: true },
    { width: 1280, height: 900, isMobile: false },
  ]) {
    it(`fits its text at ${width} px: no cell, label or button cuts what it holds (it wraps or stacks)`, async () => {
      const page = await browser.browser.newPage({ viewport: { width, height }, isMobile });
      try {
        await page.goto(`${a.url}/account`);
        await logInByKeyboard(page, 'alice-password-1');
        await page.locator('#account').waitFor({ state: 'visible' });
        // The operator's key ("managed by an operator"), a long label, and a new key's box with its secret.
        await page.getByLabel('Label').fill(`deploy pipeline of the payments team ${width}`);
        await page.getByRole('button', { name: 'Create key' }).click();
        await expect.poll(() => page.locator('#new-key-value').inputValue()).toMatch(/^ghk_/);
        await page.getByRole('row', { name: new RegExp(`payments team ${width}`) }).waitFor();
        await page.getByRole('cell', { name: 'managed by an operator' }).waitFor();
        // Run in the page (as text: this file is compiled without the DOM's types).
        const cut = await page.evaluate(`[...document.querySelectorAll('th, td, label, button, p, h1, h2, h3, li, small, input, textarea, .table-wrap')]
          .filter((element) => element.offsetParent !== null && !element.closest('.visually-hidden'))
          .filter((element) => { const head = element.closest('thead'); return !head || getComputedStyle(head).position !== 'absolute'; })
          .filter((element) => element.scrollWidth > element.clientWidth)
          .map((element) => element.tagName + ' ' + (element.textContent || element.value || '').trim().slice(0, 40)
            + ': ' + element.scrollWidth + ' > ' + element.clientWidth)`);
        expect(cut).toEqual([]);
        expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
        // The secret is all there to read, not scrolled out of sight.
        expect(await page.evaluate(`(({ scrollHeight, clientHeight }) => scrollHeight <= clientHeight)(document.getElementById('new-key-value'))`)).toBe(true);
        await mkdir(ARTIFACTS_DIR, { recursive: true });
        await page.screenshot({ path: join(ARTIFACTS_DIR, `account-page-${width}.png`), fullPage: true });
        await page.getByRole('button', { name: 'I have copied it' }).click();
        page.once('dialog', (dialog) => void dialog.accept());
        await page.getByRole('button', { name: new RegExp(`Revoke key deploy pipeline of the payments team ${width}`) }).click();
        await page.getByRole('row', { name: new RegExp(`payments team ${width}`) }).waitFor({ state: 'detached' });
      } finally {
        await page.close();
      }
    });
  }

  it('reads on a phone: nothing wider than the screen, every control labelled', async () => {
    const page = await browser.browser.newPage({ viewport: { width: 360, height: 740 }, isMobile: true });
    try {
      await page.goto(`${a.url}/account`);
      await logInByKeyboard(page, 'alice-password-1');
      await page.locator('#account').waitFor({ state: 'visible' });
      // Run in the page (as text: this file is compiled without the DOM's types).
      expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
      const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, textarea, button')]
        .filter((element) => element.offsetParent !== null)
        .filter((element) => !((element.labels?.length
          ? element.labels[0].textContent
          : (element.getAttribute('aria-label') ?? element.textContent)) ?? '').trim())
        .map((element) => element.outerHTML)`);
      expect(unlabelled).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
