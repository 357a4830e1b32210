// Spec 2.5: a requestId is a UUID. One normal form (lower case) everywhere —
// in the store, in Location, in lookups — so `ABC…` and `abc…` are one
// request whichever way an upstream or a client writes it.

/** Any UUID version or variant: upstreams choose their own generators. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The lower-cased id, or null when `value` is not a UUID string. */
export function normaliseRequestId(value: unknown): string | null {
  return typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null;
}
