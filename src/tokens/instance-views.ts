// Each instance's view of what it trusts (its signing kid, every kid it
// verifies, a digest of its users), written to the store at every
// heartbeat and after every change of keys. A rotation waits on these views
// (phase one ends when every live peer trusts the new key), and a peer whose
// view differs, or whose view this one cannot even open, is reported
// (observability/peer-agreement.ts). A view not renewed for three heartbeats
// is of an instance that is gone.
import type { SharedKeyRecords } from '../store/shared-keys.js';
import { readInstanceView, unsealedClaim, type EntrySeal, type InstanceView } from './shared-key-entry.js';

/** How often a rotation reads the views while it waits for its peers. */
const ACK_POLL_MS = 50;

export interface InstanceViewsOptions {
  records: SharedKeyRecords;
  seal: EntrySeal;
  instance: string;
  heartbeatMs: number;
  now: () => number;
}

export class InstanceViews {
  readonly #o: InstanceViewsOptions;

  constructor(options: InstanceViewsOptions) {
    this.#o = options;
  }

  get instance(): string {
    return this.#o.instance;
  }

  async write(view: InstanceView): Promise<void> {
    await this.#o.records.putInstance(this.#o.instance, this.#o.seal.seal(view));
  }

  /** Takes this instance out: peers stop waiting for it. */
  async withdraw(): Promise<void> {
    await this.#o.records.removeInstances([this.#o.instance]);
  }

  /** Every other instance whose view was renewed lately; views long gone are deleted on the way. */
  async livePeers(): Promise<InstanceView[]> {
    return (await this.read()).live;
  }

  /**
   * The live peers, and the instances whose fresh views this one cannot open
   * (sealed with a secret it does not hold: it ignores their keys, and they
   * its own). Their names and times are what the entries claim, unchecked:
   * enough to name them in an alarm, never to trust them.
   */
  async read(): Promise<{ live: InstanceView[]; unopened: string[] }> {
    const { records, seal, now, heartbeatMs } = this.#o;
    const live: InstanceView[] = [];
    const unopened: string[] = [];
    const gone: string[] = [];
    for (const [id, text] of await records.allInstances()) {
      const body = seal.open(text);
      const view = readInstanceView(body ?? unsealedClaim(text) ?? {});
      if (view === null || view.instance !== id) continue;
      const age = now() - view.seenAt;
      if (age > 3 * heartbeatMs) {
        if (age > 30 * heartbeatMs) gone.push(id);
      } else if (id === this.#o.instance) continue;
      else if (body === null) unopened.push(id);
      else live.push(view);
    }
    await records.removeInstances(gone);
    return { live, unopened: unopened.sort() };
  }

  /** Resolves once every live peer's view includes `kid`, or after `timeoutMs` with those that still do not. */
  async waitForTrust(kid: string, timeoutMs: number): Promise<{ confirmed: number; missing: string[] }> {
    const deadline = this.#o.now() + timeoutMs;
    for (;;) {
      const peers = await this.livePeers();
      const missing = peers.filter((view) => !view.kids.includes(kid)).map((view) => view.instance);
      if (missing.length === 0 || this.#o.now() >= deadline) return { confirmed: peers.length - missing.length, missing };
      await new Promise((resolve) => setTimeout(resolve, ACK_POLL_MS));
    }
  }
}
