// Says it when instances sharing a store disagree: a peer that does not trust
// a key some live instance signs with (its tokens would be refused there);
// whose users differ (a `users disable` that reached some instances only: a
// users file not copied everywhere, or an instance that missed a change of
// the store's users); or whose entries this one cannot open (another seal
// secret: each ignores the other's keys). Checked once this instance is
// published (its users read) and at every heartbeat of the shared key set;
// logged when the set of disagreeing instances changes, counted in
// `gatehouse_peer_disagreements`, and shown by /readyz.
import type { Logger } from 'pino';
import type { InstanceView } from '../tokens/shared-key-entry.js';
import type { SharedKeySet } from '../tokens/shared-keyset.js';
import type { Metrics } from './metrics.js';

export interface Agreement {
  /** Live peers seen at the last check. */
  peers: number;
  /** Instances (this one's id included when it is the one missing a key) whose keys disagree. */
  keysDiffer: string[];
  /** Peers whose users (their users file, or their view of the store's) have another digest than this instance's. */
  usersDiffer: string[];
  /** This instance and the instances whose entries it cannot open (sealed with another secret); empty when there are none. */
  sealDiffers: string[];
}

/** Pure: who disagrees, given this instance's view, its live peers', and the instances whose views it could not open. */
export function compareViews(own: InstanceView, peers: readonly InstanceView[], unopened: readonly string[] = []): Agreement {
  const everyone = [own, ...peers];
  const signing = new Set(everyone.map((view) => view.signing));
  const keysDiffer = everyone.filter((view) => [...signing].some((kid) => !view.kids.includes(kid))).map((view) => view.instance);
  // A view without a digest has not read its users yet: nothing to compare, and no alarm before the first read.
  const usersDiffer = peers.filter((view) => own.users !== undefined && view.users !== undefined && view.users !== own.users).map((view) => view.instance);
  const sealDiffers = unopened.length === 0 ? [] : [own.instance, ...unopened].sort();
  return { peers: peers.length, keysDiffer: keysDiffer.sort(), usersDiffer: usersDiffer.sort(), sealDiffers };
}

const AGREED_ON = { keys: 'signing keys', users: 'users', seal: 'seal of the shared signing keys' } as const;

export class PeerAgreement {
  #state: Agreement = { peers: 0, keysDiffer: [], usersDiffer: [], sealDiffers: [] };
  #reported = { keys: '', users: '', seal: '' };

  constructor(keys: SharedKeySet, metrics: Metrics, logger: Logger) {
    const check = (own: InstanceView, peers: InstanceView[], unopened: string[]) => {
      this.#state = compareViews(own, peers, unopened);
      metrics.peerDisagreements.set({ view: 'keys' }, this.#state.keysDiffer.length);
      metrics.peerDisagreements.set({ view: 'users' }, this.#state.usersDiffer.length);
      metrics.peerDisagreements.set({ view: 'seal' }, this.#state.sealDiffers.length);
      this.#report(
        'seal',
        this.#state.sealDiffers,
        logger,
        'instances seal the shared signing keys with different secrets (tokens.keySealSecret): ' +
          "each ignores the other's keys, so tokens signed on one are refused on another",
      );
      this.#report('keys', this.#state.keysDiffer, logger, 'instances disagree on the signing keys: tokens signed on one may be refused on another');
      this.#report(
        'users',
        this.#state.usersDiffer,
        logger,
        'instances hold different users (users files, or views of the store): a user disabled on one may still log in on another',
      );
    };
    // The check at publication may have run already (a gateway publishes once its listeners are up).
    if (keys.lastViews) check(keys.lastViews.own, keys.lastViews.peers, keys.lastViews.unopened);
    keys.on('views', check);
  }

  /** As of the last check (readiness shows it). */
  state(): Agreement {
    return this.#state;
  }

  #report(view: 'keys' | 'users' | 'seal', instances: string[], logger: Logger, message: string): void {
    const key = instances.join(',');
    if (key === this.#reported[view]) return;
    this.#reported[view] = key;
    if (instances.length > 0) logger.warn({ view, instances }, message);
    else logger.info({ view }, `instances agree on the ${AGREED_ON[view]} again`);
  }
}
