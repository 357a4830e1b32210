// Headless Chromium for browser tests: Debian's /usr/bin/chromium driven by
// playwright-core (which never downloads a browser of its own).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where browser tests keep screenshots for a reviewer (kept by CI as artifacts). */
export const ARTIFACTS_DIR = join(process.cwd(), 'test-artifacts');

export interface TestBrowser {
  browser: Browser;
  close(): Promise<void>;
}

/**
 * Starts a fresh headless Chromium (playwright gives it a new empty profile,
 * removed on close). The flags keep it
 * from reaching for the network on its own (this machine has none), which
 * would otherwise slow every start.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(`no Chromium at ${CHROMIUM_PATH}: install Debian's chromium package (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    close: () => browser.close(),
  };
}
