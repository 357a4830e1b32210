// Says it when instances sharing a store disagree: a peer that does not trust
// a key some live instance signs with (its tokens would be refused there), or
// whose users differ (a `users disable` that reached some instances only: a
// users file not copied everywhere, or with `identity.usersIn: store` an
// instance that missed the change's announcement and has not read the users
// again yet). Checked at start and at every heartbeat of the shared key set;
// logged when the set of disagreeing peers changes (at start, when there is
// one), counted in `gatehouse_peer_disagreements`, and shown by /readyz.
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
}

/** Pure: who disagrees, given this instance's view and its live peers'. */
export function compareViews(own: InstanceView, peers: readonly InstanceView[]): Agreement {
  const everyone = [own, ...peers];
  const signing = new Set(everyone.map((view) => view.signing));
  const keysDiffer = everyone.filter((view) => [...signing].some((kid) => !view.kids.includes(kid))).map((view) => view.instance);
  const usersDiffer = peers.filter((view) => view.users !== own.users).map((view) => view.instance);
  return { peers: peers.length, keysDiffer: keysDiffer.sort(), usersDiffer: usersDiffer.sort() };
}

export class PeerAgreement {
  #state: Agreement = { peers: 0, keysDiffer: [], usersDiffer: [] };
  #reported = { keys: '', users: '' };

  constructor(keys: SharedKeySet, metrics: Metrics, logger: Logger) {
    const check = (own: InstanceView, peers: InstanceView[]) => {
      this.#state = compareViews(own, peers);
      metrics.peerDisagreements.set({ view: 'keys' }, this.#state.keysDiffer.length);
      metrics.peerDisagreements.set({ view: 'users' }, this.#state.usersDiffer.length);
      this.#report('keys', this.#state.keysDiffer, logger, 'instances disagree on the signing keys: tokens signed on one may be refused on another');
      this.#report(
        'users',
        this.#state.usersDiffer,
        logger,
        'instances hold different users (users files, or views of the store): a user disabled on one may still log in on another',
      );
    };
    // The check at start: the shared key set's first heartbeat ran while it started.
    if (keys.lastViews) check(keys.lastViews.own, keys.lastViews.peers);
    keys.on('views', check);
  }

  /** As of the last check (readiness shows it). */
  state(): Agreement {
    return this.#state;
  }

  #report(view: 'keys' | 'users', instances: string[], logger: Logger, message: string): void {
    const key = instances.join(',');
    if (key === this.#reported[view]) return;
    this.#reported[view] = key;
    if (instances.length > 0) logger.warn({ view, instances }, message);
    else logger.info({ view }, `instances agree on the ${view === 'keys' ? 'signing keys' : 'users'} again`);
  }
}
