// On one instance with the in-memory store (the embedded default), a session's
// end reaches what it holds open the same way: logout ends an event stream
// cleanly and answers an upload 401, and the upstream's side of both closes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { expectStreamEnded, expectUploadRefused, openStream, openUpload, startHoldingUpstream, type HoldingUpstream } from './session-end-support.js';

let upstream: HoldingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startHoldingUpstream();
  gw = await startTestGateway({ config: { routes: [{ name: 'live', prefix: '/live', upstreams: [upstream.url] }] } });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

describe('on the in-memory store, one instance', () => {
  it('logout ends a stream and an upload', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const [stream, upload] = await Promise.all([
      openStream(`${gw.url}/live/events`, tokens.access_token, upstream),
      openUpload(`${gw.url}/live/upload`, tokens.access_token, upstream),
    ]);
    expect((await postJson(`${gw.url}/api/v1/auth/logout`, {}, { authorization: `Bearer ${tokens.access_token}` })).status).toBe(204);
    await Promise.all([expectStreamEnded(stream), expectUploadRefused(upload)]);
  });
});
