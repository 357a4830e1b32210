// `gatehouse users unlock NAME`: clears the login throttling of a username in
// the configured Redis store — its count across addresses, and every
// username+address pair's failures and wait (pair keys end with the
// address: the store finds them by their start).
import type { StoreConfig } from '../config/schema.js';
import { deleteLimiterCounters } from '../store/limiter-counters.js';
import { PAIR_FAILURES, PAIR_WAIT, USERNAME_FAILURES, usernameKey } from './login-throttle.js';

/** Deletes the username's throttling counters; resolves with how many there were. */
export async function unlockUsername(store: StoreConfig & { url: string }, username: string): Promise<number> {
  const user = usernameKey(username);
  return deleteLimiterCounters(store, [
    { name: USERNAME_FAILURES, key: user },
    { name: PAIR_FAILURES, keyStart: `${user}:` },
    { name: PAIR_WAIT, keyStart: `${user}:` },
  ]);
}
