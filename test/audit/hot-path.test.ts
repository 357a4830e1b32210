// The request hot path records nothing: proxied requests, logins and refreshes add no entry to the trail and write
// no audit log line; the trail holds only changes of who may do what.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_LOG_MESSAGE } from '../../src/audit/appender.js';
import { login, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startUpstream();
  gw = await startTestGateway({ config: { routes: [{ prefix: '/orders', upstreams: [upstream.url] }] } });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('the hot path', () => {
  it('records nothing for proxied requests', async () => {
    const before = (await gw.gateway.audit.records.all()).length;
    const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
    for (let i = 0; i < 20; i += 1) {
      const answer = await fetch(`${gw.url}/orders/${i}`, { headers: { authorization: `Bearer ${access_token}` } });
      expect(answer.status).toBe(200);
      await answer.arrayBuffer();
    }
    expect(upstream.seen).toHaveLength(20);
    expect(gw.gateway.audit.appender.waiting).toBe(0);
    expect((await gw.gateway.audit.records.all()).length).toBe(before);
    expect(gw.logs.entries().filter((line) => line['msg'] === AUDIT_LOG_MESSAGE)).toEqual([]);
  });
});
