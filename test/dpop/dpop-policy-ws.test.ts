// DPoP beyond plain HTTP routes: a WebSocket upgrade from a client that can
// set headers (a proof for the upgrade's GET), a browser-style subprotocol
// token (which can carry no proof), the upgrade never passing the proof on,
// and `tokens.dpop.policy: required` refusing tokens without a proof.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, proof, type ClientKey } from '../helpers/dpop.js';
import { postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { mustOpen, openWs, startWsUpstream, type WsUpstream } from '../helpers/ws.js';

let upstream: WsUpstream;
let gw: TestGateway;
let key: ClientKey;
let tokens: TokenSetBody;

beforeAll(async () => {
  upstream = await startWsUpstream();
  gw = await startTestGateway({ config: { tokens: { dpop: { policy: 'required' } }, routes: [{ name: 'feed', prefix: '/feed', upstreams: [upstream.url] }] } });
  key = await clientKey('EdDSA');
  const url = `${gw.url}/api/v1/auth/login`;
  const response = await postJson(url, { username: 'alice', password: 'alice-password-1' }, { dpop: await proof(key, 'POST', url) });
  expect(response.status).toBe(200);
  tokens = (await response.json()) as TokenSetBody;
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('tokens.dpop.policy: required', () => {
  it('a login without a proof is refused with 400 invalid_dpop_proof', async () => {
    const response = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' });
    expectDiagnoses(response.status, await response.text(), 400, /^400 \(Bad Request\) - invalid_dpop_proof: a DPoP proof is required$/);
  });

  it('a refresh without a proof is refused with 400 too', async () => {
    const response = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
    expectDiagnoses(response.status, await response.text(), 400, /invalid_dpop_proof: a DPoP proof is required$/);
  });
});

describe('WebSocket upgrades with a bound token', () => {
  it('opens with Authorization: DPoP and a proof for the GET of the upgrade URL; the proof stays at the gateway', async () => {
    const url = `${gw.url}/feed/live`;
    const ws = await mustOpen(url, {
      headers: {
        authorization: `DPoP ${tokens.access_token}`,
        dpop: await proof(key, 'GET', url.replace(/^http/, 'ws'), { accessToken: tokens.access_token }),
      },
    });
    ws.close();
    const handshake = upstream.handshakes.at(-1)!;
    expect(handshake.headers).not.toHaveProperty('dpop');
    expect(handshake.headers['x-gatehouse-dpop-jkt']).toBe(key.jkt);
  });

  it('attack: the bound token as Bearer on an upgrade is refused with the DPoP challenge', async () => {
    const refused = await openWs(`${gw.url}/feed/live`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(refused.ok).toBe(false);
    if (refused.ok) return;
    expect(refused.status).toBe(401);
    expect(refused.headers['www-authenticate']).toMatch(/^DPoP error="invalid_token"/);
  });

  it('attack: the bound token in the browser subprotocol (no proof possible) is refused', async () => {
    const refused = await openWs(`${gw.url}/feed/live`, { protocols: [`gatehouse.bearer.${tokens.access_token}`] });
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.status).toBe(401);
  });
});
