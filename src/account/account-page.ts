// The account page at /account: plain HTML, CSS and script modules (one
// entry, account.js, importing one module per concern), read once at start and served with a strict Content-Security-Policy: nothing
// inline, nothing from elsewhere, no framing. The page holds its tokens in
// memory only; this module only hands out the files, and the login settings
// (/account/login.json): among several providers, the local one's name, which
// the page's login names (the page and its API are the local users' only).
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import {
  ACCOUNT_PAGE_ICON_PATH,
  ACCOUNT_PAGE_LIMITS_SCRIPT_PATH,
  ACCOUNT_PAGE_MODULES,
  ACCOUNT_PAGE_LOGIN_PATH,
  ACCOUNT_PAGE_PATH,
  ACCOUNT_PAGE_SCRIPT_PATH,
  ACCOUNT_PAGE_SLASH_PATH,
  ACCOUNT_PAGE_STYLES_PATH,
} from '../http/gateway-paths.js';

/** `public/account/` of the package: two levels up from both src/account/ and dist/account/. */
const PAGE_DIR = new URL('../../public/account/', import.meta.url);

const FILES = [
  { path: ACCOUNT_PAGE_PATH, file: 'index.html', type: 'text/html; charset=utf-8' },
  { path: ACCOUNT_PAGE_STYLES_PATH, file: 'account.css', type: 'text/css; charset=utf-8' },
  { path: ACCOUNT_PAGE_SCRIPT_PATH, file: 'account.js', type: 'text/javascript; charset=utf-8' },
  { path: ACCOUNT_PAGE_LIMITS_SCRIPT_PATH, file: 'account-limits.js', type: 'text/javascript; charset=utf-8' },
  { path: ACCOUNT_PAGE_ICON_PATH, file: 'favicon.svg', type: 'image/svg+xml' },
  // What account.js imports, one module per concern.
  ...ACCOUNT_PAGE_MODULES.map((file) => ({ path: `${ACCOUNT_PAGE_SLASH_PATH}${file}`, file, type: 'text/javascript; charset=utf-8' })),
] as const;

export const ACCOUNT_PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': ACCOUNT_PAGE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  // The page is small and changes with the gateway: always fetched anew.
  'cache-control': 'no-store',
} as const;

export interface AccountPageOptions {
  /** Among several identity providers, the local one's name: the page logs in there, whatever the default is. */
  provider?: string | undefined;
  /** The gateway takes passkeys (`account.passkeys`): the page offers them. */
  passkeys?: boolean | undefined;
}

export async function accountPage(app: FastifyInstance, options: AccountPageOptions): Promise<void> {
  const login = JSON.stringify({ ...(options.provider !== undefined && { provider: options.provider }), ...(options.passkeys === true && { passkeys: true }) });
  app.get(ACCOUNT_PAGE_LOGIN_PATH, async (_request, reply) => reply.headers(SECURITY_HEADERS).type('application/json; charset=utf-8').send(login));
  const contents = await Promise.all(FILES.map(async (entry) => ({ ...entry, body: await readFile(new URL(entry.file, PAGE_DIR)) })));
  for (const { path, type, body } of contents) {
    app.get(path, async (_request, reply) => reply.headers(SECURITY_HEADERS).type(type).send(body));
  }
  app.get(ACCOUNT_PAGE_SLASH_PATH, async (_request, reply) => reply.redirect(ACCOUNT_PAGE_PATH, 301));
}
