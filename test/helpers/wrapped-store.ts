// A real store with a test's stand-ins for a few of its members, so a test can
// count what is asked of the store, hold an answer back or fail like a store
// that is down. A subclass declares only what it changes; every other member
// is the real store's own, reached through `around`, so a store operation
// added later needs nothing here and no test double drifts from the stores.
import type { Store } from '../../src/store/store.js';

class StoreInFront {
  readonly inner: Store;

  constructor(inner: Store) {
    this.inner = inner;
    // The instance is this proxy: members of the subclass first, then the real store's.
    return new Proxy(this, {
      get(wrapper, property, receiver) {
        if (property in wrapper) return Reflect.get(wrapper, property, receiver) as unknown;
        const member: unknown = Reflect.get(inner, property, inner);
        if (typeof member !== 'function') return member;
        // Through the proxy (`receiver`), which holds the subclass's private fields.
        return (...args: unknown[]) => (receiver as StoreInFront).around(String(property), () => (member as (...a: unknown[]) => unknown).apply(inner, args));
      },
    });
  }

  /** Each call of a real store's member that the subclass does not declare; passes it on unless overridden. */
  protected around(_member: string, call: () => unknown): unknown {
    return call();
  }
}

/** Every Store member a subclass does not declare is the real store's (see StoreInFront's constructor). */
export const WrappedStore = StoreInFront as unknown as new (inner: Store) => StoreInFront & Store;
