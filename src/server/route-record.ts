// Every route a listener registered, kept as it is registered, so a test can
// hold them to the one list of the gateway's paths (http/gateway-paths.ts).
import type { FastifyInstance } from 'fastify';

/** A route as a listener registered it: what the gateway answers itself (held to http/gateway-paths.ts by its test). */
export interface RegisteredRoute {
  method: string;
  url: string;
}

const registered = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** Every route registered on a listener made here, HEAD routes included. */
export function registeredRoutes(app: FastifyInstance): readonly RegisteredRoute[] {
  return registered.get(app) ?? [];
}

/** Keeps a listener's routes as they are registered; one that `accept` refuses fails the registration (and so the start). */
export function recordRoutes(app: FastifyInstance, accept: (url: string) => boolean = () => true): void {
  const routes: RegisteredRoute[] = [];
  registered.set(app, routes);
  app.addHook('onRoute', (route) => {
    if (!accept(route.url)) {
      throw new Error(`route ${route.url} is not one of the gateway's paths (http/gateway-paths.ts): the listener would hand its requests to the proxy`);
    }
    for (const method of [route.method].flat()) routes.push({ method, url: route.url });
  });
}
