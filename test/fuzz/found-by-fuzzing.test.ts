// Inputs the fuzz tests of this folder found mishandled, kept as plain tests
// so they are checked on every run whatever the random seed.
import { describe, expect, it } from 'vitest';
import { ask, expectNoServerErrors, failOnCrashes, fuzzBench } from './support.js';

failOnCrashes();
const bench = fuzzBench();

describe('a status poll by POST', () => {
  // Found by status-bodies.test.ts: Fastify refused a Content-Type it cannot
  // parse before any body parser ran, and the answer said "Content-Type must
  // be application/json", though this endpoint takes any body and drops it.
  it.each(['', ';', 'application/', 'a b', 'text/plain;;'])('gets the status whatever the Content-Type says (%j)', async (type) => {
    const { gw, alice } = bench();
    const authorization = `Bearer ${alice.access_token}`;
    const job = await ask(`${gw.url}/svc/jobs`, { method: 'POST', headers: { authorization } });
    const { requestId } = JSON.parse(job.body.toString('utf8')) as { requestId: string };
    for (const body of ['', '{"x":1}']) {
      const answer = await ask(`${gw.url}/api/v1/requests/${requestId}/status`, { method: 'POST', headers: { authorization, 'content-type': type }, body });
      expect(answer.status, answer.body.toString('utf8')).toBe(200);
      expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ status: 'pending' });
    }
    expectNoServerErrors(gw);
  });
});
