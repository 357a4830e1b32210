// The defences against floods of unauthenticated work, made together from
// `limits` because they know of each other: the memory of refused work per
// address (abuse-guard.ts) orders the hashing queue's lanes
// (fair-work-queue.ts), and each login the full queue turns away is a strike;
// load shedding on event-loop delay (load-shedder.ts) is the third. The front
// door (server/front-door.ts) answers their refusals from the request head.
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import { AbuseGuard } from '../limits/abuse-guard.js';
import { FairWorkQueue } from '../limits/fair-work-queue.js';
import { LoadShedder } from '../limits/load-shedder.js';

export interface FloodDefences {
  abuse: AbuseGuard;
  passwordHashing: FairWorkQueue;
  load: LoadShedder;
  close(): void;
}

export function floodDefences(limits: Config['limits'], metrics: Pick<Metrics, 'throttled'>): FloodDefences {
  const abuse = new AbuseGuard(limits.abuse);
  // Addresses that keep sending refused work wait behind clean addresses; those with a recent success go first.
  const passwordHashing = new FairWorkQueue(limits.passwordHashing, (address) => abuse.laneOf(address));
  passwordHashing.on('refused', (address) => {
    metrics.throttled.inc({ limit: 'password_hashing' });
    abuse.strike(address);
  });
  const load = new LoadShedder(limits.loadShedding);
  return {
    abuse,
    passwordHashing,
    load,
    close() {
      abuse.close();
      load.close();
    },
  };
}
