// The audit trail of logins: one `event: 'audit'` log line per success,
// failure, throttled attempt and lockout, and a counter of each in /metrics.
// A username is written only when it names an existing user: what a refused
// login typed into the username field may be a password.
import type { Logger } from 'pino';
import { isGatehouseError } from '../core/errors.js';
import type { Metrics } from '../observability/metrics.js';
import { gatewayActor, noAudit, type AuditRecorder } from '../audit/recorder.js';
import type { AuditEvent } from '../audit/entry.js';

export type LoginMethod = 'password' | 'api_key' | 'refresh' | 'passkey';
export type AuditOutcome = 'success' | 'failure' | 'throttled' | 'lockout';

export interface AuditFacts {
  method: LoginMethod;
  address: string;
  requestId: string;
  traceId?: string | undefined;
  /** Only of an existing user. */
  username?: string;
  sub?: string;
  sid?: string;
  /** What a lockout started (pair_wait, address_blocked, username_guarded). */
  lockout?: string;
  /** When that lockout lifts by itself (ISO 8601), unless an operator clears it first: the trail has no entry for its end. */
  lockoutEndsAt?: string;
  /** With several identity providers: the one the attempt named. */
  provider?: string | undefined;
}

const MESSAGES: Record<AuditOutcome, (method: LoginMethod) => string> = {
  success: (method) => (method === 'refresh' ? 'access token renewed' : 'session started'),
  failure: (method) => (method === 'refresh' ? 'refresh refused' : 'login refused'),
  throttled: () => 'attempt throttled: too many failures',
  lockout: () => 'throttling started: too many failures',
};

/** Told of every refused and every admitted attempt, by client address (limits/abuse-guard.ts). */
export interface AttemptRecord {
  strike(address: string): void;
  cleared(address: string): void;
}

export class LoginAudit {
  readonly #logger: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #attempts: AttemptRecord | undefined;
  readonly #trail: AuditRecorder;

  /** `trail`: the deployment's audit trail (audit/), where each lockout started is recorded too. */
  constructor(logger: Logger, metrics?: Metrics, attempts?: AttemptRecord, trail: AuditRecorder = noAudit) {
    this.#logger = logger.child({ component: 'audit' });
    this.#metrics = metrics;
    this.#attempts = attempts;
    this.#trail = trail;
  }

  record(outcome: AuditOutcome, facts: AuditFacts): void {
    // A lockout follows a failure already counted.
    if (outcome === 'success') this.#attempts?.cleared(facts.address);
    else if (outcome !== 'lockout') this.#attempts?.strike(facts.address);
    this.#metrics?.loginEvents.inc({ method: facts.method, outcome });
    if (outcome === 'throttled') this.#metrics?.throttled.inc({ limit: facts.method === 'refresh' ? 'refresh' : 'login' });
    const level = outcome === 'success' ? 'info' : 'warn';
    this.#logger[level]({ event: 'audit', outcome, ...facts }, MESSAGES[outcome](facts.method));
    if (outcome === 'lockout') this.#trail.record(lockoutEvent(facts));
  }

  /** Runs a throttle's check; a refusal (429) is recorded as throttled before it is thrown on. */
  async throttleChecked(check: () => Promise<void>, facts: AuditFacts): Promise<void> {
    try {
      await check();
    } catch (error) {
      if (isGatehouseError(error) && error.code === 'too_many_requests') this.record('throttled', facts);
      throw error;
    }
  }
}

/** A lockout as the trail keeps it: whom it guards (the user when one exists, else the address), from where. */
function lockoutEvent(facts: AuditFacts): AuditEvent {
  const details = {
    lockout: facts.lockout ?? 'unknown',
    ...(facts.lockoutEndsAt !== undefined && { endsAt: facts.lockoutEndsAt }),
    method: facts.method,
    requestId: facts.requestId,
  };
  return { kind: 'lockout.started', actor: gatewayActor(), subject: facts.username ?? facts.address, from: facts.address, outcome: 'ok', details };
}
