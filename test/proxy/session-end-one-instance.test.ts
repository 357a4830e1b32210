// On one instance with the in-memory store (the embedded default), a session's
// end reaches what it holds open the same way: logout ends an event stream
// cleanly and answers an upload 401, and the upstream's side of both closes;
// a status long poll waiting there is answered 401 too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startScriptedUpstream, type ScriptedUpstream } from '../async-requests/support.js';
import {
  LONG_WAIT_S,
  expectLongPollRefused,
  expectStreamEnded,
  expectUploadRefused,
  openLongPoll,
  openStream,
  openUpload,
  startHoldingUpstream,
  type HoldingUpstream,
} from './session-end-support.js';

let upstream: HoldingUpstream;
/** Answers 202 with a fresh requestId: what a long poll waits on. */
let jobs: ScriptedUpstream;
let gw: TestGateway;

beforeAll(async () => {
  upstream = await startHoldingUpstream();
  jobs = await startScriptedUpstream();
  gw = await startTestGateway({
    config: {
      requests: { maxWaitS: LONG_WAIT_S },
      routes: [
        { name: 'live', prefix: '/live', upstreams: [upstream.url] },
        { name: 'jobs', prefix: '/jobs', upstreams: [jobs.url] },
      ],
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
  await jobs?.close();
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

  it('logout ends a status long poll with 401', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const longPoll = await openLongPoll(`${gw.url}/jobs/new`, gw, tokens);
    expect((await postJson(`${gw.url}/api/v1/auth/logout`, {}, { authorization: `Bearer ${tokens.access_token}` })).status).toBe(204);
    await expectLongPollRefused(longPoll, gw);
  });
});
