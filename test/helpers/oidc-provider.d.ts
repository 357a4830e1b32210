// oidc-provider ships no type declarations; the tests use only this much of it.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface KoaContextWithOIDC {
    body: unknown;
    oidc: { params: Record<string, unknown>; client?: { clientId: string } };
  }
  interface TokenLike {
    accountId?: string;
    expiration: number;
    save(): Promise<string>;
  }
  type TokenConstructor = new (data: Record<string, unknown>) => TokenLike;
  export default class Provider {
    constructor(issuer: string, configuration: Record<string, unknown>);
    Grant: new (data: { accountId: string; clientId: string }) => {
      addOIDCScope(scope: string): void;
      addResourceScope(resource: string, scope: string): void;
      save(): Promise<string>;
    };
    ResourceServer: new (identifier: string, data: Record<string, unknown>) => unknown;
    AccessToken: TokenConstructor;
    RefreshToken: TokenConstructor;
    registerGrantType(name: string, handler: (ctx: KoaContextWithOIDC) => Promise<void>, parameters?: string[], allowedDuplicateParameters?: string[]): void;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
  export const errors: Record<'InvalidGrant' | 'InvalidTarget', new (description?: string) => Error>;
}
