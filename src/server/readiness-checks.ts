// The gateway's own readiness checks (server/readiness.ts says how they fold):
// unready only when this instance cannot serve at all — it is stopping, its
// public listener is not accepting connections, or it holds no keys to check
// tokens with; degraded while the store is down (the entry says what is
// refused and what still works) or while load is shed; the peers' agreement
// is shown, never failed on, and so is a Redis that evicts keys.
import { gatehouseError } from '../core/errors.js';
import type { Drain } from '../http/drain.js';
import type { LoadState } from '../limits/load-shedder.js';
import { EVICTION_FIX, type MasterEvictionPolicy } from '../store/eviction-policy.js';
import type { StoreLifecycle } from '../store/store.js';
import { storeUnavailable } from '../store/store-unavailable.js';
import type { KeySet } from '../tokens/keyset.js';
import type { Logger } from 'pino';
import type { ReadinessCheck } from './readiness.js';

/** What the instance can still do while the store does not answer (the bearer cache, the journal), and what it refuses. */
export const WITHOUT_THE_STORE = {
  stillServing: ['proxied requests with a token this instance verified before', 'asynchronous requests: 202, journaled until the store is back'],
  refused: ['logins and refreshes', 'tokens this instance has not verified before', 'status polls and reports', 'rate-limited routes'],
} as const;

export interface ReadinessParts {
  store: StoreLifecycle;
  drain: Drain;
  /** Whether the public listener accepts connections now. */
  listening: () => boolean;
  /** The keys that sign and check local tokens; fronting a provider, `identityReady` instead. */
  keys: KeySet;
  /** Fronting an OpenID Provider: resolves once its keys are held, so tokens can be checked. */
  identityReady?: (() => Promise<void>) | undefined;
  /** Instances sharing the store that disagree with this one (observability/peer-agreement.ts). */
  agreement?: (() => { peers: number; keysDiffer: string[]; usersDiffer: string[] }) | undefined;
  /** Load shedding's state now. */
  load?: (() => LoadState) | undefined;
  logger: Logger;
}

export function readinessChecks(parts: ReadinessParts): ReadinessCheck[] {
  const { store, drain, listening, keys, identityReady, agreement, load, logger } = parts;
  const checks: ReadinessCheck[] = [
    {
      name: 'draining',
      run: () =>
        drain.active
          ? { status: 'unready', detail: { draining: true }, error: gatehouseError('shutting_down') }
          : { status: 'ok', detail: { draining: false } },
    },
    {
      name: 'listener',
      run: () =>
        listening()
          ? { status: 'ok', detail: { listening: true } }
          : {
              status: 'unready',
              detail: { listening: false },
              error: gatehouseError('not_ready', { reason: 'the public listener is not accepting connections' }),
            },
    },
    { name: 'signingKeys', run: identityReady ? () => providerKeys(identityReady, logger) : () => localKeys(keys) },
    {
      name: 'store',
      run: async () => {
        try {
          await store.ping();
          return { status: 'ok', detail: { kind: store.kind, up: true } };
        } catch (error) {
          const refusal = storeUnavailable(error);
          logger.warn({ err: error }, 'degraded: the store does not answer');
          return { status: 'degraded', detail: { kind: store.kind, up: false, reason: refusal.reason, ...WITHOUT_THE_STORE } };
        }
      },
    },
  ];
  if (load) checks.push({ name: 'load', run: () => ({ status: load().shedding === 'none' ? 'ok' : 'degraded', detail: loadDetail(load()) }) });
  if (agreement) checks.push({ name: 'peers', run: () => ({ status: 'ok', detail: agreement() }) });
  if (store.evictionPolicies) checks.push(evictionCheck(store.evictionPolicies.bind(store)));
  return checks;
}

/**
 * Redis masters that delete keys when their memory is full, or would not say
 * (store/eviction-policy.ts): shown, never failed on, like the peers' agreement —
 * the store answers, and taking instances out of rotation would not change the policy.
 */
function evictionCheck(policies: () => readonly MasterEvictionPolicy[]): ReadinessCheck {
  return {
    name: 'storeEviction',
    run: () => {
      const masters = policies();
      const evicting = masters.filter((master) => master.evicts === true).map(({ address, policy }) => ({ address, policy }));
      const unknown = masters.filter((master) => master.unreadable !== undefined).map(({ address }) => address);
      if (evicting.length === 0 && unknown.length === 0) return { status: 'ok', detail: { evicting: [] } };
      return { status: 'ok', detail: { evicting, unknown, fix: EVICTION_FIX } };
    },
  };
}

/**
 * The users held in the store were lost (users/store-users.ts): degraded,
 * never unready — every instance shares the loss, and taking them all out of
 * rotation would not bring the users back; `users import` of an export does.
 */
export function usersLossCheck(usersLoss: () => { missing: string[] } | undefined): ReadinessCheck {
  return {
    name: 'users',
    run: () => {
      const loss = usersLoss();
      if (loss === undefined) return { status: 'ok', detail: { lost: false } };
      return { status: 'degraded', detail: { lost: true, missing: loss.missing, restore: 'gatehouse users import FILE (an export)' } };
    },
  };
}

async function providerKeys(identityReady: () => Promise<void>, logger: Logger) {
  try {
    await identityReady();
    return { status: 'ok', detail: { source: 'provider', held: true } } as const;
  } catch (error) {
    logger.warn({ err: error }, 'not ready: the OpenID Provider keys are not held yet');
    return { status: 'unready', detail: { source: 'provider', held: false }, error: gatehouseError('identity_provider_not_ready', { cause: error }) } as const;
  }
}

function localKeys(keys: KeySet) {
  const held = keys.publicJwks().keys.length;
  if (held > 0) return { status: 'ok', detail: { source: 'keysFile', held } } as const;
  return { status: 'unready', detail: { source: 'keysFile', held }, error: gatehouseError('not_ready', { reason: 'no signing keys are held' }) } as const;
}

/** The load entry: the shedding level, the loop's delay and utilization over the last reading. */
export function loadDetail(state: LoadState): { shedding: LoadState['shedding']; eventLoopDelayMs: number; eventLoopUtilization: number } {
  return { shedding: state.shedding, eventLoopDelayMs: Math.round(state.delayMs), eventLoopUtilization: Math.round(state.utilization * 100) / 100 };
}
