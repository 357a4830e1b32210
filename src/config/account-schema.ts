// The `account` section of the config schema: the account page and API.
import { z } from 'zod';
import * as d from './defaults.js';
import { help, httpUrl, positiveInt } from './schema-primitives.js';

/** The account page and API (src/account/): users manage their own API keys and sessions. */
export const AccountSchema = z
  .strictObject({
    /** The account page (`/account`) and API (`/api/v1/account`); with local identity only. */
    enabled: z.boolean().default(true),
    /** Keys one user may hold at once (those they made themselves and those an operator listed for them). */
    maxKeysPerUser: positiveInt.max(1000).default(d.DEFAULT_ACCOUNT_MAX_KEYS_PER_USER),
    /** The lifetime of a key created without `expiresInDays`; at most `maxKeyLifetimeDays`. */
    defaultKeyLifetimeDays: positiveInt.default(d.DEFAULT_ACCOUNT_KEY_LIFETIME_DAYS),
    /** The longest lifetime a new key may ask for. */
    maxKeyLifetimeDays: positiveInt.max(3650).default(d.DEFAULT_ACCOUNT_MAX_KEY_LIFETIME_DAYS),
    /** Creating a key needs a password login at most this old (GitHub's sudo mode). */
    recentLoginS: positiveInt.default(d.DEFAULT_ACCOUNT_RECENT_LOGIN_S),
    /** Passkeys (WebAuthn) for local users; absent, none can be registered or used. */
    passkeys: z
      .strictObject({
        /** The origin the account page is reached at, as browsers write it (`https://id.example.com`); its host is the relying party id. */
        origin: httpUrl.meta(help('the origin the account page is reached at, as browsers write it', 'https://id.example.com')),
      })
      .optional(),
  })
  .refine((account) => account.defaultKeyLifetimeDays <= account.maxKeyLifetimeDays, {
    path: ['defaultKeyLifetimeDays'],
    error: 'must not exceed maxKeyLifetimeDays',
  });
export type AccountConfig = z.infer<typeof AccountSchema>;
