// The DPoP proof of a token request (RFC 9449 5): login, refresh and the
// OAuth token endpoint. A valid proof names the key the tokens are bound to;
// a request without one gets plain bearer tokens, unless `tokens.dpop.policy`
// is `required`. A bad proof is refused before the credentials are looked at
// (400 `dpop_proof_refused`), so it costs no password hash.
import type { IncomingMessage } from 'node:http';
import { gatehouseError } from '../core/errors.js';
import { DpopNonceError, DpopProofCheck, DpopProofError } from '../dpop/proof-check.js';
import type { AttemptContext } from './login-guard.js';

export interface TokenRequestProofs {
  check: DpopProofCheck;
  /** `tokens.dpop.policy: required`: a token request without a proof is refused. */
  required: boolean;
}

/** The attempt's `context`, with the thumbprint of its proof's key when the request sent a valid one. */
export async function withTokenRequestProof(req: IncomingMessage, context: AttemptContext, proofs: TokenRequestProofs | undefined): Promise<AttemptContext> {
  if (proofs === undefined || (!proofs.required && !DpopProofCheck.present(req))) return context;
  try {
    return { ...context, dpopThumbprint: await proofs.check.check(req) };
  } catch (error) {
    if (!(error instanceof DpopProofError)) throw error; // the replay memory could not be asked: 503
    // RFC 9449 8: the error names the nonce to use next, in DPoP-Nonce.
    if (error instanceof DpopNonceError) throw gatehouseError('dpop_nonce_required', { reason: error.reason, headers: { 'dpop-nonce': error.nonce } });
    throw gatehouseError('dpop_proof_refused', { reason: error.reason, cause: error });
  }
}
