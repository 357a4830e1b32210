// Route matching: longest whole-segment prefix, then method, then Host; the
// upstream path; and the checks resolveRoute adds on top.
import { describe, expect, it } from 'vitest';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { normalizeRequestTarget } from '../../src/routing/request-target.js';
import { RouteTable, resolveRoute, upstreamPath } from '../../src/routing/route-table.js';

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

/** Name of the matched route, or undefined. */
function matched(table: RouteTable, path: string, method = 'GET', host?: string): string | undefined {
  return table.match(method, host, path)?.name;
}

describe('RouteTable.compile', () => {
  it('names a route by its name, else by its prefix', () => {
    const table = RouteTable.compile([route({ prefix: '/a/', name: 'alpha' }), route({ prefix: '/b/' })]);
    expect(table.routes.map((r) => [r.name, r.prefix])).toEqual([
      ['alpha', '/a'],
      ['/b/', '/b'],
    ]);
  });

  it('keeps / as /', () => {
    expect(RouteTable.compile([route({ prefix: '/' })]).routes[0]!.prefix).toBe('/');
  });

  it('brings prefixes and rewrite prefixes into canonical form', () => {
    const [compiled] = RouteTable.compile([route({ prefix: '/%7euser//files/', rewritePrefix: '/store/' })]).routes;
    expect(compiled!.prefix).toBe('/~user/files');
    expect(compiled!.rewritePrefix).toBe('/store');
    expect(RouteTable.compile([route({ prefix: '/a b' })]).match('GET', undefined, '/a%20b/c')?.prefix).toBe('/a%20b');
  });

  // Built past the schema, whose content checks would refuse them first: the table must refuse them on its own.
  it('refuses prefixes with dot segments or that the normaliser refuses', () => {
    expect(() => RouteTable.compile([{ ...route({ prefix: '/x', name: 'bad' }), prefix: '/a/../b' }])).toThrow(
      'route bad: prefix "/a/../b" holds . or .. segments',
    );
    expect(() => RouteTable.compile([{ ...route({ prefix: '/x' }), prefix: '/a\\b' }])).toThrow('backslash in path');
    expect(() => RouteTable.compile([{ ...route({ prefix: '/a' }), rewritePrefix: '/%zz' }])).toThrow('rewritePrefix "/%zz": malformed percent-encoding');
  });

  it('never reads a prefix as an absolute-form target', () => {
    expect(() => RouteTable.compile([{ ...route({ prefix: '/x' }), prefix: 'http://host/x' }])).toThrow('is not a path');
  });

  it('lower-cases the host and drops its port and trailing dot', () => {
    const hosts = RouteTable.compile([
      route({ prefix: '/1', host: 'API.Example.COM:8443' }),
      route({ prefix: '/2', host: 'example.org.' }),
      route({ prefix: '/3', host: '::1' }),
      route({ prefix: '/4', host: '[FE80::1]:8080' }),
    ]).routes.map((r) => r.host);
    expect(hosts).toEqual(['api.example.com', 'example.org', '[::1]', '[fe80::1]']);
  });

  it('adds HEAD where GET is allowed, and only there', () => {
    const [get, post] = RouteTable.compile([route({ prefix: '/g', methods: ['GET'] }), route({ prefix: '/p', methods: ['POST'] })]).routes;
    expect([...get!.methods!].sort()).toEqual(['GET', 'HEAD']);
    expect([...post!.methods!]).toEqual(['POST']);
  });
});

describe('RouteTable.match', () => {
  const table = RouteTable.compile([
    route({ prefix: '/', name: 'root' }),
    route({ prefix: '/api', name: 'api' }),
    route({ prefix: '/api/v1/orders', name: 'orders' }),
    route({ prefix: '/api/v1', name: 'v1' }),
  ]);

  it('lets the longest prefix win, whatever the config order', () => {
    expect(table.routes.map((r) => r.name)).toEqual(['orders', 'v1', 'api', 'root']);
    expect(matched(table, '/api/v1/orders/7')).toBe('orders');
    expect(matched(table, '/api/v1/users')).toBe('v1');
    expect(matched(table, '/api/v2')).toBe('api');
    expect(matched(table, '/other')).toBe('root');
  });

  it('matches a prefix exactly, with a trailing slash and with more segments', () => {
    expect(matched(table, '/api/v1/orders')).toBe('orders');
    expect(matched(table, '/api/v1/orders/')).toBe('orders');
    expect(matched(table, '/api/v1/orders/7/items')).toBe('orders');
  });

  it('matches whole segments only', () => {
    expect(matched(table, '/api/v1/ordersX')).toBe('v1');
    expect(matched(table, '/apix')).toBe('root');
    expect(matched(RouteTable.compile([route({ prefix: '/api/v1/orders' })]), '/api/v1/ordersX')).toBeUndefined();
  });

  it('matches everything with the prefix /', () => {
    const rootOnly = RouteTable.compile([route({ prefix: '/', name: 'root' })]);
    expect(matched(rootOnly, '/')).toBe('root');
    expect(matched(rootOnly, '/anything/at/all')).toBe('root');
  });

  it('matches prefixes without regard to ASCII case (a case-insensitive backend reads them alike)', () => {
    expect(matched(table, '/API/v1/orders')).toBe('orders');
    expect(matched(table, '/Api/V1/Users')).toBe('v1');
    expect(matched(table, '/API/v1/ORDERSX')).toBe('v1');
  });

  it('matches nothing in an empty table', () => {
    expect(matched(RouteTable.compile([]), '/')).toBeUndefined();
  });

  describe('methods', () => {
    const byMethod = RouteTable.compile([
      route({ prefix: '/r', name: 'read', methods: ['GET'] }),
      route({ prefix: '/r', name: 'write', methods: ['POST', 'PUT'] }),
    ]);

    it('matches only the listed methods', () => {
      expect(matched(byMethod, '/r', 'GET')).toBe('read');
      expect(matched(byMethod, '/r', 'POST')).toBe('write');
      expect(matched(byMethod, '/r', 'PUT')).toBe('write');
      expect(matched(byMethod, '/r', 'DELETE')).toBeUndefined();
    });

    it('allows HEAD where GET is allowed', () => {
      expect(matched(byMethod, '/r', 'HEAD')).toBe('read');
      expect(matched(RouteTable.compile([route({ prefix: '/w', methods: ['POST'] })]), '/w', 'HEAD')).toBeUndefined();
    });

    it('falls back to a shorter prefix when the longer one refuses the method', () => {
      const withFallback = RouteTable.compile([route({ prefix: '/', name: 'root' }), route({ prefix: '/r', name: 'read', methods: ['GET'] })]);
      expect(matched(withFallback, '/r/1', 'DELETE')).toBe('root');
    });
  });

  describe('hosts', () => {
    const byHost = RouteTable.compile([
      route({ prefix: '/', name: 'any' }),
      route({ prefix: '/', name: 'api', host: 'api.example.com' }),
      route({ prefix: '/', name: 'v6', host: '[::1]' }),
      route({ prefix: '/deep', name: 'deep' }),
    ]);

    it('matches the Host case-insensitively, with or without a port or trailing dot', () => {
      expect(matched(byHost, '/', 'GET', 'api.example.com')).toBe('api');
      expect(matched(byHost, '/', 'GET', 'API.Example.Com')).toBe('api');
      expect(matched(byHost, '/', 'GET', 'api.example.com:8080')).toBe('api');
      expect(matched(byHost, '/', 'GET', 'api.example.com.')).toBe('api');
      expect(matched(byHost, '/', 'GET', 'API.EXAMPLE.COM.:443')).toBe('api');
    });

    it('matches IPv6 literals with and without a port', () => {
      expect(matched(byHost, '/', 'GET', '[::1]')).toBe('v6');
      expect(matched(byHost, '/', 'GET', '[::1]:8080')).toBe('v6');
      expect(matched(byHost, '/', 'GET', '[::2]:8080')).toBe('any');
    });

    it('does not match another host, a longer one, a missing one or a malformed one', () => {
      expect(matched(byHost, '/', 'GET', 'example.com')).toBe('any');
      expect(matched(byHost, '/', 'GET', 'api.example.com.evil')).toBe('any');
      expect(matched(byHost, '/', 'GET', 'xapi.example.com')).toBe('any');
      expect(matched(byHost, '/', 'GET', undefined)).toBe('any');
      expect(matched(byHost, '/', 'GET', '')).toBe('any');
      expect(matched(byHost, '/', 'GET', '[::1')).toBe('any');
    });

    it('prefers a host-specific route over a host-less one with the same prefix, in any config order', () => {
      const reversed = RouteTable.compile([route({ prefix: '/x', name: 'host', host: 'a.test' }), route({ prefix: '/x', name: 'plain' })]);
      const inOrder = RouteTable.compile([route({ prefix: '/x', name: 'plain' }), route({ prefix: '/x', name: 'host', host: 'a.test' })]);
      for (const t of [reversed, inOrder]) {
        expect(matched(t, '/x', 'GET', 'a.test')).toBe('host');
        expect(matched(t, '/x', 'GET', 'b.test')).toBe('plain');
      }
    });

    it('still lets a longer host-less prefix beat a shorter host-specific one', () => {
      expect(matched(byHost, '/deep/1', 'GET', 'api.example.com')).toBe('deep');
    });

    it('keeps config order between otherwise equal routes', () => {
      const twins = RouteTable.compile([route({ prefix: '/t', name: 'first' }), route({ prefix: '/t', name: 'second' })]);
      expect(matched(twins, '/t')).toBe('first');
    });
  });
});

describe('upstreamPath', () => {
  const [orders, toRoot, plain, root] = RouteTable.compile([
    route({ prefix: '/api/v1/orders', rewritePrefix: '/orders' }),
    route({ prefix: '/api/v1/items', rewritePrefix: '/' }),
    route({ prefix: '/plain' }),
    route({ prefix: '/', rewritePrefix: '/v2' }),
  ]).routes;
  const up = (r: typeof orders, raw: string): string => upstreamPath(r!, normalizeRequestTarget(raw));

  it('replaces the prefix with rewritePrefix', () => {
    expect(up(orders, '/api/v1/orders/7')).toBe('/orders/7');
    expect(up(orders, '/api/v1/orders')).toBe('/orders');
    expect(up(orders, '/api/v1/orders/')).toBe('/orders/');
  });

  it('replaces the prefix with / when rewritePrefix is /', () => {
    expect(up(toRoot, '/api/v1/items/7')).toBe('/7');
    expect(up(toRoot, '/api/v1/items')).toBe('/');
    expect(up(toRoot, '/api/v1/items/')).toBe('/');
  });

  it('puts rewritePrefix in front of everything on the route /', () => {
    expect(up(root, '/x/y')).toBe('/v2/x/y');
  });

  it('forwards the canonical path when there is no rewritePrefix', () => {
    expect(up(plain, '/plain//a/%7e')).toBe('/plain/a/~');
  });

  it('appends the query untouched', () => {
    expect(up(orders, '/api/v1/orders/7?x=%2e%2e&y=/../z')).toBe('/orders/7?x=%2e%2e&y=/../z');
    expect(up(plain, '/plain?')).toBe('/plain?');
  });
});

describe('resolveRoute', () => {
  const table = RouteTable.compile([
    route({ prefix: '/api/v1/orders', name: 'orders', rewritePrefix: '/orders' }),
    route({ prefix: '/api/v1/users', name: 'users' }),
    route({ prefix: '/blobs', name: 'blobs', allowEncodedSlashes: true }),
  ]);

  function outcome(rawUrl: string, method = 'GET'): string {
    try {
      const { route: r, upstreamPath: path } = resolveRoute(table, method, 'gw.test', rawUrl);
      return `${r.name} ${path}`;
    } catch (error) {
      if (isGatehouseError(error)) return `${error.code}: ${error.reason}`;
      throw error;
    }
  }

  it('returns the route, the target and the upstream path', () => {
    const resolved = resolveRoute(table, 'GET', undefined, '/api/v1/orders/7?x=1');
    expect(resolved.route.name).toBe('orders');
    expect(resolved.target).toEqual({
      path: '/api/v1/orders/7',
      query: '?x=1',
      encodedSlash: false,
      dotSegments: false,
      rawPath: '/api/v1/orders/7',
      nonAscii: false,
    });
    expect(resolved.upstreamPath).toBe('/orders/7?x=1');
  });

  it('answers route_not_found when nothing matches', () => {
    expect(outcome('/nothing/here')).toBe('route_not_found: no route matches the request');
  });

  it('passes on normalisation refusals', () => {
    expect(outcome('/api/v1/orders/%zz')).toBe('invalid_request: malformed percent-encoding in path');
  });

  it('allows dot segments that stay within their route', () => {
    expect(outcome('/api/v1/orders/7/../8')).toBe('orders /orders/8');
    expect(outcome('/api/v1/orders/./7')).toBe('orders /orders/7');
  });

  it('refuses dot segments that leave their route for another', () => {
    expect(outcome('/api/v1/orders/../users')).toBe('invalid_request: path climbs out of its route');
  });

  it('refuses dot segments whose unresolved path matches no route', () => {
    expect(outcome('/elsewhere/../api/v1/users')).toBe('invalid_request: path climbs out of its route');
  });

  it('answers route_not_found when the resolved path matches nothing', () => {
    expect(outcome('/api/v1/orders/..')).toBe('route_not_found: no route matches the request');
  });

  it('refuses an encoded slash unless the route allows it', () => {
    expect(outcome('/api/v1/users/a%2Fb')).toBe('invalid_request: encoded slash in path');
    expect(outcome('/blobs/a%2fb')).toBe('blobs /blobs/a%2Fb');
  });
});
