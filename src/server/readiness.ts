// What `/readyz` answers: "send me traffic", or not. Each named check reports
// one entry of the body's `checks` and says what it means for the whole:
// `ok`, `degraded` (serving, but something is down: the entry says what and
// what still works) or `unready` (this instance cannot serve at all). The
// instance is unready only when some check is: a load balancer or Kubernetes
// that took every instance out of rotation for a shared fault (a Redis
// outage) would leave nothing serving, at the very moment the token cache and
// the journal exist to keep serving. The body:
//   {"status":"ready"|"degraded", "checks":{"<name>":{"status":…, …detail}}, …}
// and, unready, 503 with the first unready check's error (`$diagnoses`,
// Retry-After) beside `status: "unready"` and the same `checks`.
import { diagnosticsBody } from '../core/diagnostics.js';
import type { GatehouseError } from '../core/errors.js';

export type CheckStatus = 'ok' | 'degraded' | 'unready';

/** One check's reading: its status, the detail shown under its name, and, unready, the error the 503 carries. */
export interface CheckOutcome {
  readonly status: CheckStatus;
  readonly detail?: Readonly<Record<string, unknown>>;
  readonly error?: GatehouseError;
}

/** One entry of the readiness body's `checks`. Checks run concurrently; one that throws counts as unready. */
export interface ReadinessCheck {
  readonly name: string;
  run(): CheckOutcome | Promise<CheckOutcome>;
}

export type ReadinessStatus = 'ready' | 'degraded' | 'unready';

export interface ReadinessAnswer {
  readonly status: ReadinessStatus;
  readonly httpStatus: 200 | 503;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Record<string, unknown>;
}

const RANK: Record<CheckStatus, number> = { ok: 0, degraded: 1, unready: 2 };
const OVERALL: Record<CheckStatus, ReadinessStatus> = { ok: 'ready', degraded: 'degraded', unready: 'unready' };

/**
 * Runs every check and folds them into the answer; `extra` fields stay beside
 * `status` and `checks` (older consumers read them). `refusalOf` names the
 * error of an unready check that brought none (or threw `cause`).
 */
export async function evaluateReadiness(
  checks: readonly ReadinessCheck[],
  extra: Record<string, unknown>,
  refusalOf: (name: string, cause?: unknown) => GatehouseError,
): Promise<ReadinessAnswer> {
  const outcomes = await Promise.all(
    checks.map(async (check): Promise<[string, CheckOutcome]> => {
      try {
        return [check.name, await check.run()];
      } catch (error) {
        return [check.name, { status: 'unready', error: refusalOf(check.name, error) }];
      }
    }),
  );
  let worst: CheckStatus = 'ok';
  let refusal: GatehouseError | undefined;
  const entries: Record<string, unknown> = {};
  for (const [name, outcome] of outcomes) {
    entries[name] = { status: outcome.status, ...outcome.detail };
    if (RANK[outcome.status] > RANK[worst]) worst = outcome.status;
    if (outcome.status === 'unready') refusal ??= outcome.error ?? refusalOf(name);
  }
  const status = OVERALL[worst];
  if (status !== 'unready') return { status, httpStatus: 200, headers: {}, body: { status, checks: entries, ...extra } };
  const error = refusal ?? refusalOf('readiness');
  return { status, httpStatus: 503, headers: error.headers, body: { ...diagnosticsBody(error), status, checks: entries } };
}
