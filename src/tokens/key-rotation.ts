// The writers of the keys file. Two decide a new signing key: the start-up
// (`prepareKeysFile`: no file yet, or `tokens.algorithm` changed) and the
// operator (`gatehouse keys rotate`). Exactly one process runs the start-up
// decision: the gateway itself, or with `server.workers` the primary before it
// forks; workers and watching gateways only read the file (keyset.ts), so no
// process can sign with a key the others do not publish.
import type { Logger } from 'pino';
import type { SigningAlgorithm } from '../config/schema.js';
import { generateStoredKey, importKeys, type LoadedKey } from './key-material.js';
import { describeKeys, newestUnretired, unexpired, withNewKey, type KeyInfo } from './key-policy.js';
import { KEYS_FILE_VERSION, KeysFileError, readKeysFile, writeKeysFile } from './keys-file.js';

export interface KeysFileOptions {
  file: string;
  /** The configured algorithm: a new key's. */
  algorithm: SigningAlgorithm;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainS: number;
  /** Epoch milliseconds; for tests of retirement. */
  now?: () => number;
}

/**
 * Makes the file ready to load: creates it with a key of `algorithm` when
 * there is none, and rotates to a new key when no key may sign or the signing
 * key is of another algorithm. Resolves with the file's keys, imported.
 */
export async function prepareKeysFile(options: KeysFileOptions & { logger: Logger }): Promise<LoadedKey[]> {
  const { file, algorithm, logger } = options;
  const now = options.now ?? Date.now;
  let stored = await readKeysFile(file);
  if (stored === null) {
    const key = await generateStoredKey(algorithm, now());
    if (await writeKeysFile(file, { version: KEYS_FILE_VERSION, keys: [key] }, { exclusive: true })) {
      logger.info({ file, kid: key.kid, alg: key.alg }, 'generated a signing key');
    }
    // Created meanwhile by another instance sharing the file: its key wins, so all sign alike.
    stored = await readKeysFile(file);
    if (stored === null) throw new KeysFileError(file, 'disappeared right after it was created');
  }

  const keys = unexpired(await importKeys(file, stored.keys), now(), options.retainS * 1000);
  const current = newestUnretired(keys);
  if (current !== undefined && current.alg === algorithm) return keys;
  // Rotating here (rather than refusing to start) is what makes a change of
  // `tokens.algorithm` a one-line config edit: the old key keeps verifying.
  const rotated = withNewKey(
    keys.map((k) => k.stored),
    await generateStoredKey(algorithm, now()),
    now(),
  );
  await writeKeysFile(file, rotated);
  const loaded = await importKeys(file, rotated.keys, keys);
  const signing = newestUnretired(loaded)!;
  logger.info(
    { file, kid: signing.kid, alg: signing.alg, previousKid: current?.kid, previousAlg: current?.alg },
    current === undefined ? 'no key may sign: generated a signing key' : 'signing algorithm changed: rotated the signing key',
  );
  return loaded;
}

/** Makes a new key of `algorithm` the signing key; the previous one verifies for `retainS` more. */
export async function rotateKeys(options: KeysFileOptions): Promise<{ kid: string }> {
  const now = options.now ?? Date.now;
  const stored = (await readKeysFile(options.file)) ?? { version: KEYS_FILE_VERSION, keys: [] };
  // Importing checks every key before the file is rewritten with them.
  const keys = unexpired(await importKeys(options.file, stored.keys), now(), options.retainS * 1000);
  const key = await generateStoredKey(options.algorithm, now());
  await writeKeysFile(
    options.file,
    withNewKey(
      keys.map((k) => k.stored),
      key,
      now(),
    ),
  );
  return { kid: key.kid };
}

/** The keys in the file, newest first; an empty list when there is no file. */
export async function listKeys(options: Omit<KeysFileOptions, 'algorithm'>): Promise<KeyInfo[]> {
  const stored = await readKeysFile(options.file);
  if (stored === null) return [];
  return describeKeys(stored.keys, (options.now ?? Date.now)(), options.retainS * 1000);
}
