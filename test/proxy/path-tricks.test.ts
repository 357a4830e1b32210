// The tricks that try to reach a protected route through a public one (or the
// other way round), one test each, against resolveRoute. `/public` needs no
// auth; `/admin` and `/api/v1/orders` do.
import { describe, expect, it } from 'vitest';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { MAX_PATH_LENGTH } from '../../src/routing/request-target.js';
import { RouteTable, resolveRoute } from '../../src/routing/route-table.js';

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

const table = RouteTable.compile([
  route({ prefix: '/public', name: 'public', auth: 'none' }),
  route({ prefix: '/admin', name: 'admin' }),
  route({ prefix: '/api/v1/orders', name: 'orders', rewritePrefix: '/orders' }),
  route({ prefix: '/files', name: 'files', allowEncodedSlashes: true }),
]);

type Outcome = { route: string; auth: 'required' | 'none'; upstreamPath: string } | { refused: string; reason: string };

function resolve(rawUrl: string): Outcome {
  try {
    const resolved = resolveRoute(table, 'GET', 'gateway.test', rawUrl);
    return { route: resolved.route.name, auth: resolved.route.config.auth, upstreamPath: resolved.upstreamPath };
  } catch (error) {
    if (isGatehouseError(error)) return { refused: error.code, reason: error.reason };
    throw error;
  }
}

const climbsOut = { refused: 'invalid_request', reason: 'path climbs out of its route' };
const notFound = { refused: 'route_not_found', reason: 'no route matches the request' };
const refused = (reason: string) => ({ refused: 'invalid_request', reason });

describe('path tricks', () => {
  it('/public/../admin', () => {
    expect(resolve('/public/../admin')).toEqual(climbsOut);
  });

  it('/public/%2e%2e/admin', () => {
    expect(resolve('/public/%2e%2e/admin')).toEqual(climbsOut);
  });

  it('/public/%2E%2E/admin', () => {
    expect(resolve('/public/%2E%2E/admin')).toEqual(climbsOut);
  });

  it('/public/.%2e/admin', () => {
    expect(resolve('/public/.%2e/admin')).toEqual(climbsOut);
  });

  it('/public/%252e%252e/admin (double encoding: `..` to a backend that decodes twice)', () => {
    expect(resolve('/public/%252e%252e/admin')).toEqual(refused('double percent-encoding in path'));
  });

  it('/public/..%2fadmin', () => {
    expect(resolve('/public/..%2fadmin')).toEqual(refused('encoded slash in path'));
  });

  it('/public%2f..%2fadmin', () => {
    expect(resolve('/public%2f..%2fadmin')).toEqual(notFound);
  });

  it('/public/..\\admin', () => {
    expect(resolve('/public/..\\admin')).toEqual(refused('backslash in path'));
  });

  it('/public/..%5cadmin', () => {
    expect(resolve('/public/..%5cadmin')).toEqual(refused('backslash in path'));
  });

  it('/public/%00/../admin', () => {
    expect(resolve('/public/%00/../admin')).toEqual(refused('control character in path'));
  });

  it('//admin (merged to /admin, the protected route)', () => {
    expect(resolve('//admin')).toEqual({ route: 'admin', auth: 'required', upstreamPath: '/admin' });
  });

  it('/PUBLIC/../admin', () => {
    expect(resolve('/PUBLIC/../admin')).toEqual(climbsOut);
  });

  it('/public/./../admin', () => {
    expect(resolve('/public/./../admin')).toEqual(climbsOut);
  });

  it('/public;/../admin (; is an ordinary character)', () => {
    expect(resolve('/public;/../admin')).toEqual(climbsOut);
  });

  it('/public/..;/admin (a dot segment with parameters, read as .. by servlet containers)', () => {
    expect(resolve('/public/..;/admin')).toEqual(refused('dot segment with parameters'));
  });

  it('/admin/../public (climbing from protected to public)', () => {
    expect(resolve('/admin/../public')).toEqual(climbsOut);
  });

  it('/api/v1/orders/../../../admin', () => {
    expect(resolve('/api/v1/orders/../../../admin')).toEqual(climbsOut);
  });

  it('/../admin', () => {
    expect(resolve('/../admin')).toEqual(refused('path climbs above the root'));
  });

  it('/public?x=/../admin (the query is not matched and is kept as is)', () => {
    expect(resolve('/public?x=/../admin')).toEqual({ route: 'public', auth: 'none', upstreamPath: '/public?x=/../admin' });
  });

  it('/public#/../admin', () => {
    expect(resolve('/public#/../admin')).toEqual(refused('fragment in request target'));
  });

  it('absolute-form http://evil/admin (the path is routed, to the protected route)', () => {
    expect(resolve('http://evil/admin')).toEqual({ route: 'admin', auth: 'required', upstreamPath: '/admin' });
  });

  it('overlong paths', () => {
    const longest = '/public/' + 'a'.repeat(MAX_PATH_LENGTH - '/public/'.length);
    expect(resolve(longest)).toEqual({ route: 'public', auth: 'none', upstreamPath: longest });
    expect(resolve(longest + 'a')).toEqual(refused('path too long'));
    expect(resolve('/public/' + '../'.repeat(MAX_PATH_LENGTH) + 'admin')).toEqual(refused('path too long'));
  });

  it('/api/v1/ordersX (no match on a partial segment)', () => {
    expect(resolve('/api/v1/ordersX')).toEqual(notFound);
  });

  it('encoded slash, allowed only on a route with allowEncodedSlashes', () => {
    expect(resolve('/files/a%2fb')).toEqual({ route: 'files', auth: 'required', upstreamPath: '/files/a%2Fb' });
    expect(resolve('/admin/a%2Fb')).toEqual(refused('encoded slash in path'));
    expect(resolve('/public/a%2Fb')).toEqual(refused('encoded slash in path'));
  });
});
