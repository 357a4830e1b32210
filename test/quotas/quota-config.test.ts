// A route's quotas are checked at load: each mistake is named by its field's
// path, and nothing is unlimited unless the config says `unlimited`.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';

function withQuotas(quotas: unknown): unknown {
  return {
    identity: { provider: 'local', usersFile: '/nonexistent/users.yaml' },
    tokens: { keysFile: '/nonexistent/keys.json' },
    routes: [{ name: 'orders', prefix: '/orders', upstreams: ['http://127.0.0.1:1'], quotas }],
  };
}

const problemsOf = (quotas: unknown) => configProblems(() => parseConfig(withQuotas(quotas), { baseDir: '/', env: {} }));
const minute = { name: 'per-minute', by: 'subject', per: 'minute', limit: 100 };

describe('quota config', () => {
  it('names each mistake by its path', () => {
    const problems = problemsOf([
      { ...minute, limit: 0 },
      { ...minute, name: 'daily', per: 'day', timeZone: 'Mars/Olympus', burst: 5 },
      { ...minute, name: 'by-what', by: 'nobody' },
      { ...minute, name: 'daily' },
    ]).join('\n');
    expect(problems).toMatch(/routes\[0\]\.quotas\[0\]\.limit/);
    expect(problems).toMatch(/routes\[0\]\.quotas\[1\]\.timeZone: must be an IANA time zone/);
    expect(problems).toMatch(/routes\[0\]\.quotas\[1\]\.burst: applies to rates/);
    expect(problems).toMatch(/routes\[0\]\.quotas\[2\]\.by: must be subject, apiKey, address or claim:<name>/);
    expect(problems).toMatch(/routes\[0\]\.quotas\[3\]\.name: another limit of this route is named daily/);
  });

  it('has no unlimited default: a missing size is a mistake, unlimited is written', () => {
    expect(problemsOf([{ name: 'x', by: 'subject', per: 'minute' }]).join('\n')).toMatch(/routes\[0\]\.quotas\[0\]\.limit/);
    expect(problemsOf([{ ...minute, tiers: { claim: 'roles', limits: { pro: 0 } } }]).join('\n')).toMatch(/quotas\[0\]\.tiers\.limits\.pro/);
  });
});
