// A client that gives up must cost the upstream nothing more: its request is
// aborted at once and never sent again, not by the gateway's retry on the
// next target and not by the connection pool re-dispatching it on a fresh
// connection after it tore down the one the aborted request held.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send } from '../helpers/http-client.js';
import { Arrivals, echo, startUpstream, type Upstream } from '../helpers/upstream.js';

/** Requests to `/gone/hang…` are held forever; the rest are echoed. */
const held = new Arrivals();
let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream((req, res) => (req.url?.startsWith('/gone/hang') ? held.hold(req, res) : echo(req, res)));
  gw = await startTestGateway({
    // Two entries for one upstream: a gateway that retried on "the next target" would reach it again.
    config: { routes: [{ name: 'gone', prefix: '/gone', upstreams: [upstream.url, upstream.url], auth: 'none' }] },
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const arrivalsOf = (url: string) => upstream.seen.filter((seen) => seen.url === url).length;

describe('a client that goes away', () => {
  it.each([['GET'], ['DELETE']])('is never retried: the upstream sees its %s once, and its socket closes', async (method) => {
    const url = `/gone/hang-${method}`;
    const client = httpRequest(`${gw.url}${url}`, { method, agent: false });
    client.on('error', () => {});
    client.end();
    const arrival = await held.of(url);
    client.destroy();
    await arrival.gone;
    // A round trip through the same pool after the close: a re-sent request would be queued ahead of it.
    for (let i = 0; i < 2; i++) expect((await send(`${gw.url}/gone/after-${method}-${i}`)).status).toBe(200);
    expect(arrivalsOf(url)).toBe(1);
  });
});
