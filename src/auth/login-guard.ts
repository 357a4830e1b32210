// The one guard every login (passkeys' included) and refresh passes through,
// whichever identity mode checks the credentials (local: auth-service.ts; a
// fronted OpenID Provider: oidc/provider-auth.ts). It takes the throttle before anything
// is checked, counts a refused guess (and only a refused guess: an outage is
// no guess, nor is a token of ours whose session ended) for throttling,
// clears the pair's failures on success and writes the audit line of each
// outcome (login-audit.ts).
//
// What the mode does is passed in as steps; the refusals they throw are the
// catalogue's: `invalid_user_credentials` for credentials,
// `invalid_refresh_token` for a refresh and `passkey_refused` for a passkey's answer. Anything else a step throws passes
// through unrecorded.
import { isGatehouseError } from '../core/errors.js';
import { parseApiKey } from '../users/api-keys.js';
import type { Lockout, LoginThrottle } from '../limits/login-throttle.js';
import { refusesWellSignedToken } from '../tokens/types.js';
import type { AuditFacts, LoginAudit, LoginMethod } from './login-audit.js';

/** Where an attempt comes from: the client address after trusted proxies, and the request id for the audit trail. */
export interface AttemptContext {
  address: string;
  requestId: string;
  /** The request's W3C trace id: the audit line carries it like every line of the request. */
  traceId?: string;
  /**
   * The JWK thumbprint of the key that signed the request's valid DPoP proof
   * (RFC 9449): the tokens issued are bound to it, and a bound refresh token
   * is refreshed only with it. Absent: no proof was sent.
   */
  dpopThumbprint?: string;
  /** With several identity providers: the one a login names (its `provider` field); absent, the default one. */
  provider?: string;
}

/** Who a login or refresh let in, for the success line (not the proxy's `Admitted`: what admission establishes for a request). */
export interface LoginSuccess {
  username: string;
  sub: string;
  sid: string;
  /** How the credential turned out to be used, when the mode knows better than the typed password's shape. */
  method?: 'password' | 'api_key';
}

export interface LoginAttempt {
  username: string;
  password: string;
  context: AttemptContext;
  /** Whether `username` names an existing user: only then is it written on the refusal lines (what was typed may be a password). */
  knownUser: boolean;
}

export interface LoginSteps<C, T> {
  /** The credential check; throws `invalid_user_credentials` for a refused guess, which is counted. */
  check(): Promise<C>;
  /**
   * What follows a check that passed and was cleared from the throttle (a
   * session is started, tokens handed out). Its own `invalid_user_credentials`
   * (the credential went away meanwhile) is a refusal that is audited, not a
   * guess that is counted.
   */
  start(checked: C): Promise<{ result: T; admitted: LoginSuccess }>;
}

/**
 * What an error thrown by an attempt is: a refusal that may be a guess (`counted` against the address, and audited),
 * a refusal that is no guess (`audited` only), or no refusal at all (an outage: `passed` through unrecorded).
 */
type Refusal = 'counted' | 'audited' | 'passed';

export class LoginGuard {
  readonly #throttle: LoginThrottle;
  readonly #audit: LoginAudit;

  constructor(throttle: LoginThrottle, audit: LoginAudit) {
    this.#throttle = throttle;
    this.#audit = audit;
  }

  /** Spec 4.1, throttled per username, address and both, in front of the mode's credential check. */
  async login<C, T>(attempt: LoginAttempt, steps: LoginSteps<C, T>): Promise<T> {
    const { username, password, context } = attempt;
    const method: LoginMethod = parseApiKey(password) ? 'api_key' : 'password';
    const facts: AuditFacts = { method, ...attemptFacts(context), ...(attempt.knownUser && { username }) };
    await this.#audit.throttleChecked(() => this.#throttle.checkLogin(username, context.address), facts);
    let checked: C;
    try {
      checked = await steps.check();
    } catch (error) {
      if (isRefusal(error, 'invalid_user_credentials')) {
        const lockout = await this.#throttle.loginFailed(username, context.address);
        this.#audit.record('failure', facts);
        if (lockout) this.#audit.record('lockout', lockoutFacts(facts, lockout));
      }
      throw error;
    }
    await this.#throttle.loginSucceeded(username, context.address);
    let started: { result: T; admitted: LoginSuccess };
    try {
      started = await steps.start(checked);
    } catch (error) {
      if (isRefusal(error, 'invalid_user_credentials')) this.#audit.record('failure', facts);
      throw error;
    }
    this.#audit.record('success', successFacts(facts, started.admitted));
    return started.result;
  }

  /** Spec 4.2: a refresh token the mode refuses (`invalid_refresh_token`) counts against the address, unless it bears our valid signature. */
  refresh<T>(context: AttemptContext, renew: () => Promise<{ result: T; admitted: LoginSuccess }>): Promise<T> {
    // Only what could be a guess marks the address (and so a guarded username's login from it): a
    // token of ours whose session ended or time ran out is a user's stale tab, not a guess.
    return this.#byAddress('refresh', context, renew, (error) => {
      if (!isRefusal(error, 'invalid_refresh_token')) return 'passed';
      return refusesWellSignedToken(error) ? 'audited' : 'counted';
    });
  }

  /**
   * A login with a passkey: no username is typed, so the address is what a refused answer (`passkey_refused`, or
   * `invalid_user_credentials` for another user's session to step up) counts against, as a forged refresh token does.
   */
  passkey<T>(context: AttemptContext, login: () => Promise<{ result: T; admitted: LoginSuccess }>): Promise<T> {
    return this.#byAddress('passkey', context, login, (error) =>
      isRefusal(error, 'passkey_refused') || isRefusal(error, 'invalid_user_credentials') ? 'counted' : 'passed',
    );
  }

  /** An attempt throttled and counted by its address alone; `refusal` tells what an error thrown by `run` is. */
  async #byAddress<T>(
    method: LoginMethod,
    context: AttemptContext,
    run: () => Promise<{ result: T; admitted: LoginSuccess }>,
    refusal: (error: unknown) => Refusal,
  ): Promise<T> {
    const facts: AuditFacts = { method, ...attemptFacts(context) };
    await this.#audit.throttleChecked(() => this.#throttle.checkAddress(context.address), facts);
    let done: { result: T; admitted: LoginSuccess };
    try {
      done = await run();
    } catch (error) {
      const kind = refusal(error);
      const lockout = kind === 'counted' ? await this.#throttle.addressRefused(context.address) : undefined;
      if (lockout) this.#audit.record('lockout', lockoutFacts(facts, lockout));
      if (kind !== 'passed') this.#audit.record('failure', facts);
      throw error;
    }
    this.#audit.record('success', successFacts(facts, done.admitted));
    return done.result;
  }
}

function attemptFacts(context: AttemptContext): Pick<AuditFacts, 'address' | 'requestId' | 'traceId' | 'provider'> {
  return {
    address: context.address,
    requestId: context.requestId,
    traceId: context.traceId,
    ...(context.provider !== undefined && { provider: context.provider }),
  };
}

function successFacts(facts: AuditFacts, admitted: LoginSuccess): AuditFacts {
  return { ...facts, ...(admitted.method && { method: admitted.method }), username: admitted.username, sub: admitted.sub, sid: admitted.sid };
}

function isRefusal(error: unknown, code: 'invalid_user_credentials' | 'invalid_refresh_token' | 'passkey_refused'): boolean {
  return isGatehouseError(error) && error.code === code;
}

/** A lockout's audit facts: what it is, and the moment it lifts by itself, as the trail writes times. */
function lockoutFacts(facts: AuditFacts, lockout: Lockout): AuditFacts {
  return { ...facts, lockout: lockout.kind, lockoutEndsAt: new Date(Date.now() + lockout.endsInMs).toISOString() };
}
