// Strict paths: what the normaliser calls ambiguous, how the most forgiving
// backend would read it, and what resolveRoute does with it on a strict
// route and on one that opts out.
import { describe, expect, it } from 'vitest';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { lenientReading } from '../../src/routing/lenient-path.js';
import { normalizeRequestTarget } from '../../src/routing/request-target.js';
import { RouteTable, resolveRoute } from '../../src/routing/route-table.js';

const ambiguity = (rawUrl: string): string | undefined => normalizeRequestTarget(rawUrl).ambiguity;

const PARAMETERS = 'parameters (;) in path';
const DOUBLE = 'double percent-encoding in path';
const NOT_UTF8 = 'percent-encoded bytes in path are not UTF-8';
const SEGMENT_END = 'path segment ends in a dot or a space';

describe('ambiguous paths', () => {
  it.each([
    ['/admin;x/users', PARAMETERS],
    ['/admin;jsessionid=1', PARAMETERS],
    ['/admin%3Bx/users', PARAMETERS],
    ['/admin%3bx', PARAMETERS],
    ['/%2561dmin', DOUBLE],
    ['/a%252e%252e/b', DOUBLE],
    ['/a%25aa', DOUBLE],
    // The escaped escape spelled with escapes of its own: `%2561` only once they are decoded.
    ['/%25%36%31dmin', DOUBLE],
    ['/%25%361dmin', DOUBLE],
    ['/%256%31dmin', DOUBLE],
    ['/a/%25%32%65%25%32%65/b', DOUBLE],
    ['/%c0%ae%c0%ae/admin', NOT_UTF8],
    ['/%C1%81', NOT_UTF8],
    ['/%e0%80%ae', NOT_UTF8],
    ['/%f0%80%80%ae', NOT_UTF8],
    ['/%ed%a0%80', NOT_UTF8],
    ['/%f4%90%80%80', NOT_UTF8],
    ['/%f5%80%80%80', NOT_UTF8],
    ['/%a9', NOT_UTF8],
    ['/%c3', NOT_UTF8],
    ['/%c3/', NOT_UTF8],
    ['/%c3a', NOT_UTF8],
    ['/%c3%41', NOT_UTF8],
    ['/%e2%82', NOT_UTF8],
    ['/%ff', NOT_UTF8],
    ['/admin./users', SEGMENT_END],
    ['/admin.', SEGMENT_END],
    ['/admin%2e/users', SEGMENT_END],
    ['/admin%2E', SEGMENT_END],
    ['/admin%20/users', SEGMENT_END],
    ['/admin%20', SEGMENT_END],
    ['/admin..', SEGMENT_END],
    ['/...', SEGMENT_END],
  ])('%s: %s', (path, reason) => {
    expect(ambiguity(path)).toBe(reason);
  });

  it.each([
    '/admin/users',
    '/caf%C3%A9/%E2%82%AC/%F0%9F%98%80/%EF%BF%BD/%F4%8F%BF%BF',
    '/a%20b/c',
    '/file.txt/v1.2.3',
    '/a/./b/../c/',
    '/.well-known/x',
    '/100%25',
    '/100%25zz',
    '/a%2Fb',
    '/x?q=;%3B%2561&a.=%20',
  ])('%s is not ambiguous', (path) => {
    expect(ambiguity(path)).toBeUndefined();
  });

  it('names the first ambiguity it meets', () => {
    expect(ambiguity('/a;b/%2561/c.')).toBe(PARAMETERS);
    expect(ambiguity('/c./a;b')).toBe(SEGMENT_END);
  });
});

describe('lenientReading', () => {
  it.each([
    ['/site/admin;x/users', '/site/admin/users'],
    ['/site/admin%3Bx/users', '/site/admin/users'],
    ['/site/%2561dmin/users', '/site/admin/users'],
    ['/site/%252561dmin', '/site/admin'],
    ['/site/admin./users', '/site/admin/users'],
    ['/site/admin.%20.%20/users', '/site/admin/users'],
    ['/site/x/%C0%AE%C0%AE/admin/users', '/site/admin/users'],
    ['/site/x/%E0%80%AE%E0%80%AE/admin', '/site/admin'],
    ['/site/x%5C..%5Cadmin', '/site/admin'],
    ['/site/x%252F..%252Fadmin', '/site/admin'],
    ['/site/admin%2500.png', '/site/admin'],
    ['/site/../../../admin', '/admin'],
    ['/site/caf%C3%A9;v=1', '/site/caf%C3%A9'],
    ['/site/%FF', '/site/%EF%BF%BD'],
    ["/site/a$b:c@d!e*f'(g)+,h=i~", "/site/a$b:c@d!e*f'(g)+,h=i~"],
  ])('%s reads as %s', (path, reading) => {
    expect(lenientReading(path)).toBe(reading);
  });
});

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

describe('resolveRoute on ambiguous paths', () => {
  const table = RouteTable.compile([
    route({ prefix: '/site', name: 'site', auth: 'none' }),
    route({ prefix: '/site/admin', name: 'site-admin' }),
    route({ prefix: '/legacy', name: 'legacy', auth: 'none', strictPaths: false }),
    route({ prefix: '/legacy/admin', name: 'legacy-admin', strictPaths: false }),
  ]);

  function resolve(rawUrl: string): string {
    try {
      const { route: matched, upstreamPath } = resolveRoute(table, 'GET', undefined, rawUrl);
      return `${matched.name} ${upstreamPath}`;
    } catch (error) {
      if (isGatehouseError(error)) return `${error.status} ${error.reason}`;
      throw error;
    }
  }

  it('strictPaths is on by default', () => {
    expect(route({ prefix: '/x' }).strictPaths).toBe(true);
  });

  it('a strict route refuses every ambiguity with its reason', () => {
    expect(resolve('/site/admin;x/users')).toBe(`400 ${PARAMETERS}`);
    expect(resolve('/site/page;jsessionid=1')).toBe(`400 ${PARAMETERS}`);
    expect(resolve('/site/%2561dmin')).toBe(`400 ${DOUBLE}`);
    expect(resolve('/site/x/%c0%ae%c0%ae/admin')).toBe(`400 ${NOT_UTF8}`);
    expect(resolve('/site/admin./users')).toBe(`400 ${SEGMENT_END}`);
  });

  it('a path that folds into the protected route is the protected route', () => {
    expect(resolve('/site/Admin/users')).toBe('site-admin /site/Admin/users');
    expect(resolve('/SITE/ADMIN')).toBe('site-admin /SITE/ADMIN');
  });

  it('a route that opts out passes ambiguous paths that stay in it, as sent', () => {
    expect(resolve('/legacy/page;jsessionid=1')).toBe('legacy /legacy/page;jsessionid=1');
    expect(resolve('/legacy/report%2520final')).toBe('legacy /legacy/report%2520final');
    expect(resolve('/legacy/admin/x;v=2')).toBe('legacy-admin /legacy/admin/x;v=2');
  });

  it('a route that opts out still refuses a path some server reads as another route', () => {
    for (const path of [
      '/legacy/admin;x/users',
      '/legacy/admin%3Bx',
      '/legacy/%2561dmin',
      '/legacy/admin./users',
      '/legacy/admin%20',
      '/legacy/x/%c0%ae%c0%ae/admin',
    ]) {
      expect(resolve(path), path).toBe('400 path reads as another route');
    }
  });
});
