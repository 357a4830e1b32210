// The key set of a gateway that signs nothing: fronting an OpenID Provider,
// the provider signs every token and its own keys verify them (oidc/), so no
// keys file is read or created. Nothing here is ever asked to sign or verify;
// if something were, it fails loudly instead of using a key nobody configured.
import type { KeySet } from './keyset.js';

export const NO_SIGNING_KEYS: KeySet = {
  algorithm: 'EdDSA',
  signingKey() {
    throw new Error('this gateway signs no tokens (identity.provider: oidc)');
  },
  getVerificationKey() {
    return Promise.reject(new Error('this gateway holds no signing keys (identity.provider: oidc)'));
  },
  publicJwks: () => ({ keys: [] }),
  algorithms: () => [],
  close() {},
};
