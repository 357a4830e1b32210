// The one place that turns the `identity` section of the configuration into a
// provider. A later OpenID Connect provider is one more case here.
import type { Logger } from 'pino';
import type { IdentityConfig } from '../config/schema.js';
import type { IdentityProvider } from './identity-provider.js';
import { LocalIdentityProvider, type PasswordCheckOptions } from './local-provider.js';

export async function createIdentityProvider(config: IdentityConfig, logger: Logger, options: PasswordCheckOptions = {}): Promise<IdentityProvider> {
  switch (config.provider) {
    case 'local':
      return LocalIdentityProvider.open(config, logger, options);
    default: {
      const unknown: never = config.provider;
      throw new Error(`unknown identity provider: ${String(unknown)}`);
    }
  }
}
