// The one way a command opens the configured store: created silent, asked to
// answer within one deadline (createStore starts without an answer, as a
// gateway waits for Redis, but a command must not act on what it cannot
// read), used, and closed whatever happens.
import { pino } from 'pino';
import type { StoreConfig } from '../config/schema.js';
import { withinDeadline } from '../core/deadline.js';
import { createStore } from '../store/create-store.js';
import type { Store } from '../store/store.js';
import { redactStoreUrl } from '../store/store-url.js';
import { CliError } from './command.js';

/** How long a command waits for the configured Redis before it says it cannot reach it. */
const STORE_ANSWER_TIMEOUT_MS = 3_000;

/**
 * Runs `use` with the store of `config`, closed afterwards. `unreachable`
 * ends the CliError of a store that does not answer: what the command cannot
 * do without it.
 */
/** The store did not answer the ping a command opens it with. */
export class StoreUnreachable extends CliError {}

export async function withStore<T>(config: StoreConfig, unreachable: string, use: (store: Store) => Promise<T>): Promise<T> {
  const store = await createStore(config, pino({ enabled: false }));
  try {
    await withinDeadline(store.ping(), STORE_ANSWER_TIMEOUT_MS).catch((error: unknown) => {
      const at = config.url === undefined ? '' : ` at ${redactStoreUrl(config.url)}`;
      throw new StoreUnreachable(`cannot reach the store${at} (${(error as Error).message}): ${unreachable}`);
    });
    return await use(store);
  } finally {
    await store.close();
  }
}
