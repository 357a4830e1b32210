// What the schema's types cannot say, checked with the config: clashing
// routes, prefixes the gateway serves itself, and values the parts built from
// the config would refuse. Each problem names its field; all come at once.
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';

const BASE = {
  identity: { provider: 'local', usersFile: 'users.yaml' },
  tokens: { keysFile: 'keys.json' },
};
const UP = ['http://127.0.0.1:3000'];

/** The problems of a config; none when it validates. */
function problemsOf(raw: Record<string, unknown>): readonly string[] {
  const config = { ...BASE, ...raw };
  try {
    parseConfig(config, { baseDir: '/', env: {} });
    return [];
  } catch {
    return configProblems(() => parseConfig(config, { baseDir: '/', env: {} }));
  }
}

const routes = (...list: Array<Record<string, unknown>>) => ({ routes: list.map((r) => ({ upstreams: UP, ...r })) });

describe('duplicate routes', () => {
  it('refuses a route name used twice, naming both routes', () => {
    expect(problemsOf(routes({ name: 'orders', prefix: '/a' }, { name: 'other', prefix: '/b' }, { name: 'orders', prefix: '/c' }))).toEqual([
      'routes[2].name: duplicate route name "orders" (also routes[0])',
    ]);
  });

  it('refuses a prefix used twice for the same host, also when written differently', () => {
    expect(problemsOf(routes({ prefix: '/orders' }, { prefix: '/orders/' }, { prefix: '/%6Frders' }))).toEqual([
      'routes[1].prefix: duplicate prefix "/orders/" (also routes[0])',
      'routes[2].prefix: duplicate prefix "/%6Frders" (also routes[0])',
    ]);
    expect(problemsOf(routes({ prefix: '/h', host: 'API.example.com' }, { prefix: '/h', host: 'api.example.com:443' }))).toEqual([
      'routes[1].prefix: duplicate prefix "/h" on host "api.example.com" (also routes[0])',
    ]);
  });

  it('refuses the same prefix for overlapping methods (HEAD goes where GET goes)', () => {
    expect(problemsOf(routes({ prefix: '/w', methods: ['GET'] }, { prefix: '/w', methods: ['HEAD', 'POST'] }))).toEqual([
      'routes[1].prefix: duplicate prefix "/w" (also routes[0])',
    ]);
    expect(problemsOf(routes({ prefix: '/w' }, { prefix: '/w', methods: ['DELETE'] }))).toHaveLength(1);
  });

  it('accepts the same prefix on other hosts or for other methods: each route can still be reached', () => {
    expect(
      problemsOf(
        routes(
          { name: 'any-host', prefix: '/p' },
          { name: 'host-a', prefix: '/p', host: 'a.example.com' },
          { name: 'host-b', prefix: '/p', host: 'b.example.com' },
          { name: 'reads', prefix: '/q', methods: ['GET'] },
          { name: 'writes', prefix: '/q', methods: ['POST', 'PUT'] },
          { prefix: '/q/r' },
        ),
      ),
    ).toEqual([]);
  });

  it('finds duplicates even when another route has its own problems', () => {
    const problems = problemsOf(
      routes({ name: 'a', prefix: '/a' }, { name: 'a', prefix: '/b', upstreams: ['ftp://x'] }, { name: 'c', prefix: '/a', timeout: 1 }),
    );
    expect(problems).toHaveLength(4);
    expect(problems).toEqual(
      expect.arrayContaining([
        'routes[1].name: duplicate route name "a" (also routes[0])',
        'routes[1].upstreams[0]: must be an http:// or https:// URL',
        expect.stringMatching(/^routes\[2\]: Unrecognized key: "timeout"/),
        'routes[2].prefix: duplicate prefix "/a" (also routes[0])',
      ]),
    );
  });
});

describe('what the route table would refuse', () => {
  it('refuses a prefix the gateway serves itself, in any spelling', () => {
    expect(problemsOf(routes({ prefix: '/api/v1/%61uth/x' }, { prefix: '/oauth' }))).toEqual([
      'routes[0].prefix: /api/v1/%61uth/x is served by the gateway itself',
      'routes[1].prefix: /oauth is served by the gateway itself',
    ]);
  });

  it('refuses prefixes with dot segments and hosts it cannot read, naming the route', () => {
    expect(problemsOf(routes({ name: 'dots', prefix: '/x/../a' }, { name: 'v6', prefix: '/v', host: '[::1' }))).toEqual([
      'routes[0]: route dots: prefix "/x/../a" holds . or .. segments',
      'routes[1]: route v6: host "[::1" has no closing ]',
    ]);
  });

  it('tells a fault the schema found once, not again as the route table would', () => {
    expect(problemsOf(routes({ prefix: 'no-slash' }))).toEqual(['routes[0].prefix: must be a path starting with / and holding no ? or #']);
  });
});

describe('values other parts would refuse at start', () => {
  it('refuses a store URL the store cannot use, without showing its password', () => {
    const problems = problemsOf({ store: { url: 'redis://:s3cret@:6379/x' } });
    expect(problems).toEqual([expect.stringMatching(/^store\.url: invalid store URL "redis:\/\/:\*\*\*@:6379\/x": /)]);
    expect(problems.join('\n')).not.toContain('s3cret');
  });

  it('names the environment variable a bad store URL came from', () => {
    expect(() => parseConfig(BASE, { baseDir: '/', env: { REDIS_URL: 'redis-cluster://:6379' } })).toThrow(/store\.url \(from REDIS_URL\): invalid store URL/);
  });

  it('refuses a trusted proxy that is no address, range or name', () => {
    expect(problemsOf({ server: { trustedProxies: ['loopback', '10.0.0.0/8', '10.0.0.1/99', 'proxy.internal'] } })).toEqual([
      'server.trustedProxies[2]: invalid range on address: 10.0.0.1/99',
      'server.trustedProxies[3]: invalid IP address: proxy.internal',
    ]);
  });

  it('refuses identity headers that collide or that the gateway already handles', () => {
    expect(problemsOf({ proxy: { identityHeaders: { username: 'X-Gatehouse-Subject' } } })).toEqual([
      'proxy.identityHeaders: each identity header needs a name of its own',
    ]);
    expect(problemsOf({ proxy: { identityHeaders: { session: 'X-Forwarded-For' } } })).toEqual([
      expect.stringMatching(/^proxy\.identityHeaders: "x-forwarded-for" is a header the gateway already handles/),
    ]);
  });
});

describe('every problem at once', () => {
  it('reports schema and content problems of every section together, in the order of the file', () => {
    const problems = problemsOf({
      server: { port: -1, trustedProxies: ['nope'] },
      store: { url: 'redis://h:99999' },
      ...routes({ name: 'a', prefix: '/a' }, { name: 'a', prefix: '/a' }),
    });
    expect(problems.map((p) => p.split(': ')[0])).toEqual(['server.port', 'server.trustedProxies[0]', 'store.url', 'routes[1].name', 'routes[1].prefix']);
  });
});
