// The gateway's audit trail (audit/open-trail.ts), its checkpoints signed with the token signing key so the
// published JWKS checks them, and typed apart from access tokens (`typ`), so neither is taken for the other.
// With a fronted OpenID Provider the gateway holds no signing key: its trail has no checkpoints.
import type { Logger } from 'pino';
import { CHECKPOINT_TYPE } from '../audit/checkpoint.js';
import type { AuditEntry } from '../audit/entry.js';
import { openAuditTrail, type AuditTrail } from '../audit/open-trail.js';
import type { Config } from '../config/schema.js';
import type { AuditStore } from '../store/store.js';
import { signCompactJws } from './compact-jws.js';
import type { KeySet } from './keyset.js';

export function openSignedAuditTrail(
  config: Config,
  store: AuditStore,
  keys: Pick<KeySet, 'signingKey'>,
  logger: Logger,
  exported?: (entry: AuditEntry) => void,
): Promise<AuditTrail> {
  const local = config.identity.provider === 'local';
  return openAuditTrail({
    config: config.audit,
    store,
    logger,
    exported,
    gateway: { sign: local ? (payload) => signCompactJws(keys.signingKey(), { typ: CHECKPOINT_TYPE }, payload) : undefined },
  });
}
