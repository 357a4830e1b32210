// Rotating the service token without refusing a backend: while
// `requests.serviceTokenPrevious` is set, the internal API takes either
// token, each compared in constant time; anything else is refused as before,
// and the previous one is refused again once it is removed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { reportStatus, SERVICE_TOKEN, startScriptedUpstream, type ScriptedUpstream } from './support.js';

const PREVIOUS = 'previous-service-token-0123456789abcdef012';

describe('the internal status API during a rotation of the service token', () => {
  let up: ScriptedUpstream;
  const gateways: TestGateway[] = [];

  beforeAll(async () => {
    up = await startScriptedUpstream();
  });

  afterAll(async () => {
    await Promise.all(gateways.map((gw) => gw.close()));
    await up?.close();
  });

  async function start(requests: Record<string, string>): Promise<{ gw: TestGateway; accept: () => Promise<string> }> {
    const gw = await startTestGateway({ config: { requests, routes: [{ name: 'orders', prefix: '/orders', upstreams: [up.url] }] } });
    gateways.push(gw);
    const alice: TokenSetBody = await login(gw.url, 'alice', 'alice-password-1');
    const accept = async () => {
      const response = await fetch(`${gw.url}/orders/new`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
      return ((await response.json()) as { requestId: string }).requestId;
    };
    return { gw, accept };
  }

  it('accepts the current and the previous token, and nothing else', async () => {
    const { gw, accept } = await start({ serviceToken: SERVICE_TOKEN, serviceTokenPrevious: PREVIOUS });
    for (const token of [SERVICE_TOKEN, PREVIOUS]) {
      expect((await reportStatus(gw.adminUrl!, await accept(), { status: 'completed' }, { token })).status).toBe(200);
    }
    for (const token of [PREVIOUS.replace(/.$/, 'X'), PREVIOUS.slice(0, 32), `${PREVIOUS}x`, null, '']) {
      expect((await reportStatus(gw.adminUrl!, await accept(), { status: 'completed' }, { token })).status).toBe(401);
    }
  });

  it('refuses the previous token once it is removed', async () => {
    const { gw, accept } = await start({ serviceToken: SERVICE_TOKEN });
    expect((await reportStatus(gw.adminUrl!, await accept(), { status: 'completed' }, { token: PREVIOUS })).status).toBe(401);
    expect((await reportStatus(gw.adminUrl!, await accept(), { status: 'completed' }, { token: SERVICE_TOKEN })).status).toBe(200);
  });
});
