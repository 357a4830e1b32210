// Issue 22, paths: a route that takes encoded slashes forwards `%2F` as sent,
// and a backend that decodes it once reads `/files/..%2F..%2Fprivate/x` as
// `/bucket/private/x` (past the route's rewritePrefix) or as `/private/x`. Each
// spelling is refused with 400 before any upstream is chosen; what stays in
// the route still passes as sent.
import { describe, expect, it } from 'vitest';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { encodedSlashReading } from '../../src/routing/lenient-path.js';
import { RouteTable, resolveRoute } from '../../src/routing/route-table.js';

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

const table = RouteTable.compile([
  route({ prefix: '/files', name: 'files', auth: 'none', allowEncodedSlashes: true, rewritePrefix: '/bucket/files' }),
  route({ prefix: '/loose', name: 'loose', auth: 'none', allowEncodedSlashes: true, strictPaths: false }),
  route({ prefix: '/private', name: 'private' }),
  route({ prefix: '/', name: 'root', auth: 'none', allowEncodedSlashes: true }),
]);

function resolve(rawUrl: string): string {
  try {
    const resolved = resolveRoute(table, 'GET', 'gateway.test', rawUrl);
    return `${resolved.route.name} ${resolved.upstreamPath}`;
  } catch (error) {
    if (isGatehouseError(error)) return `${error.status} ${error.code}: ${error.reason}`;
    throw error;
  }
}

const DOT_BESIDE_SLASH = '400 invalid_request: dot segment next to an encoded slash';
const BACKSLASH = '400 invalid_request: backslash in path';
const DOUBLE = '400 invalid_request: double percent-encoding in path';
const OTHER_ROUTE = '400 invalid_request: path reads as another route';

describe('dot segments beside encoded slashes, refused', () => {
  it.each([
    ['..%2F..%2F as in the issue', '/files/..%2F..%2Fprivate/x'],
    ['lower-case %2f', '/files/..%2f..%2fprivate/x'],
    ['%2e%2e%2F, every character encoded', '/files/%2e%2e%2F%2e%2e%2Fprivate/x'],
    ['mixed case %2E%2e%2f', '/files/%2E%2e%2f%2e%2E%2Fprivate/x'],
    ['half encoded .%2e%2F', '/files/.%2e%2F%2e.%2Fprivate/x'],
    ['..%2f…etc%2fpasswd', '/files/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd'],
    ['in the middle of a segment', '/files/x%2F..%2F..%2F..%2Fprivate'],
    ['at the end', '/files/x%2F..'],
    ['a single dot', '/files/x%2F.%2Fy'],
    ['%2e%2e/ resolved first, then ..%2F', '/files/a/%2e%2e/..%2F..%2Fprivate/x'],
    ['%2e%2e%2F then a literal ../', '/files/a/b/%2e%2e%2F../private'],
    ['doubled encoded slashes', '/files/..%2F%2F..%2F%2Fprivate'],
    ['Tomcat ..;x beside it', '/files/x%2F..;x%2F..;x%2Fprivate'],
    ['Tomcat ..%3B beside it', '/files/x%2F..%3Bx%2Fprivate'],
    ['IIS ..%20 (trailing space)', '/files/x%2F..%20%2F..%20%2Fprivate'],
    ['IIS ... (trailing dots)', '/files/x%2F...%2F...%2Fprivate'],
    ['on a route without strict paths', '/loose/..%2F..%2Fprivate/x'],
    ['on the root route', '/..%2Fprivate/x'],
  ])('%s: %s', (_, path) => {
    expect(resolve(path)).toBe(DOT_BESIDE_SLASH);
  });
});

describe('backslash spellings of the same climb, refused', () => {
  it.each([
    ['..%5C', '/files/..%5C..%5Cprivate/x', BACKSLASH],
    ['..%5c', '/files/..%5c..%5cprivate/x', BACKSLASH],
    ['%2e%2e%5C', '/files/%2e%2e%5C%2e%2e%5Cprivate/x', BACKSLASH],
    ['..%2F and %5C mixed', '/files/..%2F..%5Cprivate/x', BACKSLASH],
    ['literal ..\\', '/files/..\\..\\private/x', BACKSLASH],
    ['double-encoded ..%255C', '/files/..%255C..%255Cprivate/x', DOUBLE],
    ['double-encoded ..%252F', '/files/..%252F..%252Fprivate/x', DOUBLE],
    ['double-encoded, on a route without strict paths', '/loose/..%252F..%252Fprivate/x', OTHER_ROUTE],
    ['double-encoded backslash, on a route without strict paths', '/loose/..%255C..%255Cprivate/x', OTHER_ROUTE],
  ])('%s: %s', (_, path, outcome) => {
    expect(resolve(path)).toBe(outcome);
  });
});

describe('an encoded slash that reads as another route once decoded, refused', () => {
  it.each([
    ['/private%2Fx under the root route', '/private%2Fx'],
    ['/PRIVATE%2fx, case folded as routes are', '/PRIVATE%2fx'],
    ['/%2Fprivate/x', '/%2Fprivate/x'],
    ['/files%2Fx (the files route, through the root one)', '/files%2Fx'],
  ])('%s', (_, path) => {
    expect(resolve(path)).toBe(OTHER_ROUTE);
  });
});

describe('encoded slashes that stay in their route, passed as sent', () => {
  it.each([
    ['/files/a%2Fb/c', 'files /bucket/files/a%2Fb/c'],
    ['/files/a%2fb', 'files /bucket/files/a%2Fb'],
    ['/files/v1.2%2F.config%2F..x', 'files /bucket/files/v1.2%2F.config%2F..x'],
    ['/files/a/../b%2Fc', 'files /bucket/files/b%2Fc'],
    ['/files/%2F%2Fa', 'files /bucket/files/%2F%2Fa'],
    ['/loose/x%2Fy;v=1', 'loose /loose/x%2Fy;v=1'],
    ['/public%2Fx', 'root /public%2Fx'],
  ])('%s', (path, outcome) => {
    expect(resolve(path)).toBe(outcome);
  });
});

describe('encodedSlashReading', () => {
  it.each([
    ['/files/a%2Fb/c', '/files/a/b/c'],
    ['/files/%2F%2Fa%2F', '/files/a/'],
    ['/private%2fx', '/private/x'],
    ['/', '/'],
  ])('%s reads as %s', (path, reading) => {
    expect(encodedSlashReading(path)).toBe(reading);
  });

  it.each(['/a%2F..', '/a%2F.%2Fb', '/..%2Fb', '/a%2F..%20', '/a%2F...', '/a%2F..;x', '/a%2F..%3bx'])('%s has a dot segment', (path) => {
    expect(encodedSlashReading(path)).toBeUndefined();
  });

  it.each(['/a%2F.b', '/a%2F..b', '/a%2Fb.', '/a%2F.%21'])('%s has none', (path) => {
    expect(encodedSlashReading(path)).not.toBeUndefined();
  });
});
