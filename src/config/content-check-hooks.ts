// What the config schema asks of the checks that live above it (config-load/):
// the schema says what a config is; whether its routes compile, its addresses
// parse and its header names clash is judged by the very code that later
// builds those parts, which config/ may not import. So the schema is made
// with the checks handed in (createConfigSchema), and the types need none.
import type { z } from 'zod';

export interface ContentChecks {
  /** `store.url`: hosts, ports, credentials' encoding and parameters. */
  storeUrl(url: string, ctx: z.RefinementCtx): void;
  /** One `server.trustedProxies` entry. */
  trustedProxy(entry: string, ctx: z.RefinementCtx): void;
  /** `proxy.identityHeaders`: distinct names no other header rule owns. */
  identityHeaders(names: Record<string, string>, ctx: z.RefinementCtx): void;
  /** The routes, each on its own and against each other. */
  routes(routes: readonly unknown[], ctx: z.RefinementCtx): void;
  /** With health on the public listener (`server.health.on: public`): no route claims its paths. */
  healthOnPublic(routes: readonly unknown[], ctx: z.RefinementCtx): void;
}
