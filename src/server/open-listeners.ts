// A gateway's start, from bound sockets to a peer: the public listener, then
// the admin one; when either cannot bind (an address in use), what did bind
// is let go before the error goes on, and nothing was published, so other
// instances never count one that never served. Only with both up is this
// instance's signing key published (trusted by every live peer before it
// goes on) and its view written (tokens/shared-keyset.ts).
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';

export interface OpenListenersOptions {
  config: Config;
  app: FastifyInstance;
  admin: FastifyInstance | undefined;
  /** Publishes this instance to its peers (the shared key set); absent without a shared store. */
  peers: { publish(): Promise<void> } | undefined;
}

export async function openListeners(options: OpenListenersOptions): Promise<{ url: string; adminUrl: string | undefined }> {
  const { config, app, admin } = options;
  let addresses: { url: string; adminUrl: string | undefined };
  try {
    const url = await app.listen({ host: config.server.host, port: config.server.port });
    addresses = { url, adminUrl: admin ? await admin.listen({ host: config.admin.host, port: config.admin.port }) : undefined };
  } catch (error) {
    await app.close();
    throw error;
  }
  await options.peers?.publish();
  return addresses;
}
