// The account page's second factor and step-up in real Chromium: a user sets
// up an authenticator app on the page (QR code drawn without breaking the
// CSP, the secret read off the page, a first code confirming it, recovery
// codes shown once), logs out, logs in with password and code, and, sent to
// /account?acr_values=… as a client does after an RFC 9470 challenge, steps
// the same session (same sid) up to the level asked for. Codes are computed
// here with otpauth from the secret the page showed.
import type { Page } from 'playwright-core';
import * as OTPAuth from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from '../helpers/browser.js';
import { jwtPayload, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';

const MFA = 'urn:gatehouse:acr:mfa';
const STEP_MS = 30_000;

let browser: TestBrowser;
let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ users: [{ name: 'alice', password: 'alice-password-1' }] });
  browser = await launchBrowser();
});
afterAll(async () => {
  await browser?.close();
  await gw?.close();
});

/** The code an authenticator app would show at `atMs` for the secret the page showed. */
const codeAt = (secret: string, atMs: number) => new OTPAuth.TOTP({ secret: OTPAuth.Secret.fromBase32(secret) }).generate({ timestamp: atMs });

async function logIn(page: Page, code?: string): Promise<TokenSetBody> {
  const answered = page.waitForResponse((response) => response.url().endsWith('/api/v1/auth/login'));
  await page.getByLabel('Username').fill('alice');
  await page.locator('#login-password').fill('alice-password-1');
  if (code !== undefined) await page.locator('#login-code').fill(code);
  await page.getByRole('button', { name: 'Log in' }).click();
  const response = await answered;
  expect(response.status()).toBe(200);
  await page.locator('#account').waitFor({ state: 'visible' });
  return (await response.json()) as TokenSetBody;
}

describe('second factor and step-up on the account page', () => {
  it('enrols an authenticator app, logs in with its code, and steps the same session up via ?acr_values', async () => {
    const page = await browser.browser.newPage();
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    try {
      // 1. Enrol on the page.
      await page.goto(`${gw.url}/account`);
      await logIn(page);
      await expect.poll(() => page.locator('#totp-status').textContent()).toBe('No authenticator app is set up.');
      await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
      await page.locator('#totp-setup').waitFor({ state: 'visible' });
      const secret = (await page.locator('#totp-secret').textContent())!;
      expect(secret).toMatch(/^[A-Z2-7]{16,}$/);
      // The QR code is drawn (an <svg> with its modules), with nothing the CSP had to block.
      const qr = page.getByRole('img', { name: 'QR code to scan with your authenticator app' });
      await qr.waitFor();
      expect(await page.locator('#totp-qr svg path, #totp-qr svg rect').count()).toBeGreaterThan(0);
      expect((await qr.boundingBox())!.width).toBeGreaterThan(100);

      await page.getByLabel('The code your app shows').fill(codeAt(secret, Date.now() - STEP_MS));
      await page.getByRole('button', { name: 'Confirm' }).click();
      await page.locator('#recovery').waitFor({ state: 'visible' });
      const recoveryCodes = await page.locator('#recovery-codes li').allTextContents();
      expect(recoveryCodes).toHaveLength(10);
      expect(await page.locator('#totp-setup').isHidden()).toBe(true);
      await expect.poll(() => page.locator('#totp-status').textContent()).toBe('An authenticator app is set up. Recovery codes left: 10.');
      // Shown once: gone when the user says they kept them.
      await page.getByRole('button', { name: 'I have kept them' }).click();
      expect(await page.locator('#recovery-codes li').count()).toBe(0);

      // 2. Log out, then a wrong code is refused in the page's words; the right one logs in at the mfa level.
      await page.getByRole('button', { name: 'Log out' }).click();
      await page.locator('#login').waitFor({ state: 'visible' });
      await page.getByLabel('Username').fill('alice');
      await page.locator('#login-password').fill('alice-password-1');
      await page.locator('#login-code').fill('000000' === codeAt(secret, Date.now()) ? '111111' : '000000');
      await page.getByRole('button', { name: 'Log in' }).click();
      await expect.poll(() => page.locator('#login-error').textContent()).toBe('Wrong username, password or one-time code.');
      const withCode = await logIn(page, codeAt(secret, Date.now()));
      expect(jwtPayload(withCode.access_token)).toMatchObject({ acr: MFA, amr: ['pwd', 'otp'] });

      // 3. Sent to /account?acr_values=… by a client: a password-only login, then the page asks for more.
      await page.goto(`${gw.url}/account?acr_values=${encodeURIComponent(MFA)}&max_age=300`);
      await page.locator('#login-step-up').waitFor({ state: 'visible' });
      const passwordOnly = await logIn(page);
      expect(jwtPayload(passwordOnly.access_token).acr).not.toBe(MFA);
      await page.locator('#step-up-form').waitFor({ state: 'visible' });
      expect(await page.locator('#step-up-level').textContent()).toBe(MFA);

      // Without the code the login answers that a second factor is needed, and the page asks for it.
      await page.locator('#step-up-password').fill('alice-password-1');
      await page.locator('#step-up-form').getByRole('button', { name: 'Confirm' }).click();
      await expect.poll(() => page.locator('#step-up-error').textContent()).toBe('Enter the one-time code from your authenticator app as well.');

      const steppedUp = page.waitForResponse((response) => response.url().endsWith('/api/v1/auth/login') && response.status() === 200);
      await page.locator('#step-up-code').fill(codeAt(secret, Date.now() + STEP_MS));
      await page.locator('#step-up-form').getByRole('button', { name: 'Confirm' }).click();
      const stepped = (await (await steppedUp).json()) as TokenSetBody;
      await expect.poll(() => page.locator('#step-up-status').textContent()).toBe(`Your session now meets ${MFA}.`);
      expect(await page.locator('#step-up-form').isHidden()).toBe(true);
      // The same session, now at the level asked for.
      const before = jwtPayload(passwordOnly.access_token);
      const after = jwtPayload(stepped.access_token);
      expect(after.sid).toBe(before.sid);
      expect(after).toMatchObject({ acr: MFA, amr: ['pwd', 'otp'] });
      // Still bound to the page's key: its one proof named the session and the new tokens' key alike.
      expect(stepped.token_type).toBe('DPoP');
      expect(after.cnf).toEqual(before.cnf);
      // The page carries on with the stepped-up tokens.
      const nextCall = page.waitForRequest((request) => new URL(request.url()).pathname === '/api/v1/account/api-keys' && request.method() === 'POST');
      await page.getByLabel('Label').fill('after step-up');
      await page.getByRole('button', { name: 'Create key' }).click();
      expect((await nextCall).headers().authorization).toBe(`${stepped.token_type} ${stepped.access_token}`);

      expect(cspViolations).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
