// The one place that turns the `identity` section of the configuration into a
// provider: the local users file, or a fronted OpenID Provider.
import type { Logger } from 'pino';
import type { IdentityConfig } from '../config/schema.js';
import type { IdentityProvider } from './identity-provider.js';
import { ProviderIdentity } from '../oidc/provider-identity.js';
import { LocalIdentityProvider, type PasswordCheckOptions } from './local-provider.js';

export async function createIdentityProvider(config: IdentityConfig, logger: Logger, options: PasswordCheckOptions = {}): Promise<IdentityProvider> {
  switch (config.provider) {
    case 'local':
      return LocalIdentityProvider.open(config, logger, options);
    case 'oidc':
      return new ProviderIdentity();
    default: {
      const unknown: never = config;
      throw new Error(`unknown identity provider: ${String((unknown as { provider: unknown }).provider)}`);
    }
  }
}
