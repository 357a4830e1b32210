// A gateway's start, from bound sockets to a peer: the public listener, then
// the admin one and the health-only one when configured; when one cannot
// bind (an address in use), those that did are let go before the error goes
// on, and nothing was published, so other instances never count one that
// never served. Only with all of them up is this instance's signing key
// published (trusted by every live peer before it goes on) and its view
// written (tokens/shared-keyset.ts).
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/schema.js';

export interface OpenListenersOptions {
  config: Config;
  app: FastifyInstance;
  admin: FastifyInstance | undefined;
  /** The health-only listener (`server.health`), when health has one of its own. */
  healthOnly: FastifyInstance | undefined;
  /** Publishes this instance to its peers (the shared key set); absent without a shared store. */
  peers: { publish(): Promise<void> } | undefined;
}

export interface ListenerAddresses {
  url: string;
  adminUrl: string | undefined;
  healthUrl: string | undefined;
}

export async function openListeners(options: OpenListenersOptions): Promise<ListenerAddresses> {
  const { config, app, admin, healthOnly } = options;
  const bound: FastifyInstance[] = [];
  const bind = async (listener: FastifyInstance, host: string, port: number) => {
    const url = await listener.listen({ host, port });
    bound.push(listener);
    return url;
  };
  let addresses: ListenerAddresses;
  try {
    addresses = {
      url: await bind(app, config.server.host, config.server.port),
      adminUrl: admin ? await bind(admin, config.admin.host, config.admin.port) : undefined,
      healthUrl: healthOnly ? await bind(healthOnly, config.server.health.host, config.server.health.port) : undefined,
    };
  } catch (error) {
    // The public one even when its own bind failed: closing what never bound is harmless, and its server may hold a handle.
    await Promise.all([...new Set([app, ...bound])].map((listener) => listener.close()));
    throw error;
  }
  await options.peers?.publish();
  return addresses;
}
