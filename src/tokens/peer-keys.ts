// The keys other instances published, as this one read them from the store:
// each entry opened (its seal checked), imported once per text, dropped (and
// deleted) past its time. While the seal is rotated, entries still sealed
// with the previous secret are sealed again with the current one on the way,
// so that once the previous secret is removed everywhere no key anyone still
// trusts is lost: a pod replaced during the rotation leaves its keys behind,
// sealed as they were, for as long as the tokens they signed are valid.
import type { Logger } from 'pino';
import type { SharedKeyRecords } from '../store/shared-keys.js';
import type { WatchedKeySet } from './keyset.js';
import { importPublishedKey, type EntrySeal, type PeerKey, type PublishedKey } from './shared-key-entry.js';

export interface PeerKeysOptions {
  records: SharedKeyRecords;
  seal: EntrySeal;
  /** This instance's own keys: never counted as a peer's. */
  local: Pick<WatchedKeySet, 'knows'>;
  logger: Logger;
  now: () => number;
}

export class PeerKeys {
  readonly #o: PeerKeysOptions;
  /** Peers' keys by kid. */
  #peers = new Map<string, PeerKey>();
  /** Parsed entries by their text, so an unchanged entry is not checked and imported again. */
  #parsed = new Map<string, PeerKey | null>();

  constructor(options: PeerKeysOptions) {
    this.#o = options;
  }

  /** The peer's key for `kid`, while it may still verify. */
  get(kid: string): PeerKey | undefined {
    const key = this.#peers.get(kid);
    return key !== undefined && key.verifyUntil > this.#o.now() ? key : undefined;
  }

  kids(): string[] {
    return [...this.#peers.keys()];
  }

  all(): PeerKey[] {
    return [...this.#peers.values()];
  }

  /** Reads every published key; resolves true when the peers' kids changed. */
  async read(): Promise<boolean> {
    const { records, seal, logger, now } = this.#o;
    const parsed = new Map<string, PeerKey | null>();
    const peers = new Map<string, PeerKey>();
    const expired: string[] = [];
    const reseal: Array<[kid: string, body: Record<string, unknown>]> = [];
    for (const [kid, text] of await records.allKeys()) {
      let key = this.#parsed.get(text);
      if (key === undefined) {
        const opened = seal.openSealed(text);
        key = opened === null ? null : await importPublishedKey(opened.body);
        if (key === null || key.kid !== kid) {
          logger.warn({ kid }, 'ignoring a shared signing key entry that is not sealed by this deployment or not a valid public key');
          key = null;
        } else if (opened?.role === 'previous' && key.verifyUntil > now()) reseal.push([kid, opened.body]);
      }
      parsed.set(text, key);
      if (key === null) continue;
      if (key.verifyUntil <= now()) expired.push(kid);
      else if (!this.#o.local.knows(kid)) peers.set(kid, key);
    }
    await this.#sealAgain(reseal);
    this.#parsed = parsed;
    const changed = peers.size !== this.#peers.size || [...peers.keys()].some((kid) => !this.#peers.has(kid));
    this.#peers = peers;
    if (changed) logger.info({ kids: [...peers.keys()] }, 'took up the signing keys other instances published');
    await records.removeKeys(expired);
    return changed;
  }

  async #sealAgain(entries: ReadonlyArray<[kid: string, body: Record<string, unknown>]>): Promise<void> {
    if (entries.length === 0) return;
    for (const [kid, body] of entries) await this.#o.records.putKey(kid, this.#o.seal.seal(body as unknown as PublishedKey));
    this.#o.logger.info({ kids: entries.map(([kid]) => kid) }, 'sealed again with the current secret the shared signing keys sealed with the previous one');
  }
}
