// The V8 settings a serving process runs with, set as `gatehouse start` begins (before the gateway allocates).
//
// Allocation-site pretenuring off. V8 watches, at each scavenge, how many objects from each allocation site are
// still alive; a site whose objects mostly are is switched to allocate straight into the old generation. A gateway
// holding many requests in flight at once (HTTP/2: ten streams of a connection arrive in one read and live together)
// reads as such a site now and then, although every one of its objects dies within milliseconds. Once switched, every
// request's objects land in the old generation and are freed only by full collections. Measured on HTTP/2 at ten
// streams per connection: in 8 runs of 17, 1.9 to 6.6 KB a request promoted instead of 0.09 KB, and 11 to 30 µs of
// GC a request instead of 5; in none of 11 runs with this setting. HTTP/1.1 was never seen switched (8 runs).
// Why: docs/decisions/0028-no-allocation-site-pretenuring.md
import { setFlagsFromString } from 'node:v8';

/** The V8 flag a serving process is given; the bench gives its Node baselines the same, so rows differ by code only. */
export const SERVING_V8_FLAGS = ['--no-allocation-site-pretenuring'] as const;

/**
 * Applies `SERVING_V8_FLAGS` to this process. V8 reads this flag when it weighs a scavenge's survivors, so set at run
 * time it does what the same flag on node's command line does (measured both ways; the test holds it).
 */
export function tuneHeapForServing(): void {
  for (const flag of SERVING_V8_FLAGS) setFlagsFromString(flag);
}
