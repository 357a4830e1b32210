// Checkpoints: every so often the trail holds a JWS, signed with the gateway's token signing key, over the seq and
// hash of the entry it vouches for. Anyone holding the published JWKS can check it (jose), so rewriting the chain
// from some entry on needs that key too, not only write access to the store.
import { compactVerify, type CompactVerifyGetKey } from 'jose';
import type { AuditEntry, AuditEvent } from './entry.js';
import { gatewayActor } from './recorder.js';

export const CHECKPOINT_KIND = 'audit.checkpoint';
/** The JWS `typ` of a checkpoint: a token verifier never takes one for an access token. */
export const CHECKPOINT_TYPE = 'gatehouse-audit-checkpoint+jws';

/** Signs `payload` as a compact JWS with the gateway's current signing key; throws when it has none. */
export type CheckpointSigner = (payload: { seq: number; hash: string; iat: number }) => string;

export function checkpointEvent(entry: AuditEntry, sign: CheckpointSigner): AuditEvent {
  const jws = sign({ seq: entry.seq, hash: entry.hash, iat: Math.floor(Date.now() / 1000) });
  return {
    kind: CHECKPOINT_KIND,
    actor: gatewayActor(),
    subject: `seq ${entry.seq}`,
    outcome: 'ok',
    details: { through: entry.seq, throughHash: entry.hash, jws },
  };
}

/** Why a checkpoint does not hold, or undefined when it does: its signature checks and it names `vouched` as it is. */
export async function checkpointProblem(checkpoint: AuditEntry, vouched: AuditEntry | undefined, keys: CompactVerifyGetKey): Promise<string | undefined> {
  const jws = checkpoint.details?.['jws'];
  if (typeof jws !== 'string') return 'holds no signature';
  let payload: { seq?: unknown; hash?: unknown };
  try {
    const verified = await compactVerify(jws, keys);
    if (verified.protectedHeader.typ !== CHECKPOINT_TYPE) return `is signed as ${String(verified.protectedHeader.typ)}, not as a checkpoint`;
    payload = JSON.parse(new TextDecoder().decode(verified.payload)) as typeof payload;
  } catch (error) {
    return `signature does not check against the JWKS (${(error as Error).message})`;
  }
  if (payload.seq !== checkpoint.details?.['through'] || payload.hash !== checkpoint.details?.['throughHash']) return 'signed other values than it states';
  // Cut by retention since: the walk of the chain judges what the trail still holds.
  if (!vouched) return undefined;
  if (vouched.hash !== payload.hash) return `vouches for entry ${vouched.seq} with another hash: that entry was rewritten`;
  return undefined;
}
