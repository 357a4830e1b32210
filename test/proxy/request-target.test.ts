// The canonical form of a request target: what is decoded, kept, merged,
// resolved and refused.
import { describe, expect, it } from 'vitest';
import { isGatehouseError } from '../../src/core/errors.js';
import { MAX_PATH_LENGTH, normalizeRequestTarget } from '../../src/routing/request-target.js';

/** The reason a target is refused with; fails the test when it is not refused. */
function refusal(rawUrl: string): string {
  try {
    normalizeRequestTarget(rawUrl);
  } catch (error) {
    if (isGatehouseError(error) && error.code === 'invalid_request') return error.reason;
    throw error;
  }
  throw new Error(`${rawUrl} was not refused`);
}

const path = (rawUrl: string): string => normalizeRequestTarget(rawUrl).path;

describe('normalizeRequestTarget', () => {
  describe('the fast path', () => {
    it('returns a canonical path as the very same string', () => {
      const raw = '/api/v1/orders/7';
      const target = normalizeRequestTarget(raw);
      expect(target).toEqual({ path: raw, query: '', encodedSlash: false, dotSegments: false, rawPath: raw, nonAscii: false });
      expect(target.path).toBe(raw);
    });

    it('keeps dots inside segments and sub-delimiters as they are', () => {
      expect(path("/static/app.min.js;v=1/a:b@c!$&'()*+,=~_-")).toBe("/static/app.min.js;v=1/a:b@c!$&'()*+,=~_-");
      expect(path('/.well-known/...')).toBe('/.well-known/...');
      expect(normalizeRequestTarget('/.well-known/...').dotSegments).toBe(false);
    });

    it('keeps the root and a trailing slash', () => {
      expect(path('/')).toBe('/');
      expect(path('/api/')).toBe('/api/');
    });
  });

  describe('the query', () => {
    it('splits at the first ? and keeps the query untouched', () => {
      expect(normalizeRequestTarget('/a/%7e/../b?x=%2e%2e/..//&y=?z')).toMatchObject({ path: '/a/b', query: '?x=%2e%2e/..//&y=?z' });
    });

    it('keeps an empty query as the bare ?', () => {
      expect(normalizeRequestTarget('/a?')).toMatchObject({ path: '/a', query: '?' });
    });

    it('refuses a fragment, in the path or in the query', () => {
      expect(refusal('/a#b')).toBe('fragment in request target');
      expect(refusal('/a?x=1#b')).toBe('fragment in request target');
    });
  });

  describe('the request target form', () => {
    it('takes the path of an absolute-form target', () => {
      expect(normalizeRequestTarget('http://evil.example:8080/a//b?q=1')).toMatchObject({ path: '/a/b', query: '?q=1' });
      expect(path('HTTPS://user@host/x')).toBe('/x');
    });

    it('uses / for an absolute-form target without a path', () => {
      expect(normalizeRequestTarget('http://host?q')).toMatchObject({ path: '/', query: '?q' });
    });

    it('refuses asterisk-form, authority-form, relative paths and other schemes', () => {
      for (const raw of ['*', 'host:443', 'api/v1', '', 'ftp://host/x', 'http:/x', 'http:///x']) {
        expect(refusal(raw), raw).toBe('request target is not a path');
      }
    });
  });

  describe('percent-encoding', () => {
    it('decodes escapes of unreserved characters', () => {
      expect(path('/%61pi/%7Euser/%2D%5F%2e%30')).toBe('/api/~user/-_.0');
    });

    it('keeps other escapes, in uppercase hex', () => {
      expect(path('/a%20b/%c3%A9/%25/%3b%3F%23')).toBe('/a%20b/%C3%A9/%25/%3B%3F%23');
    });

    it('does not decode twice', () => {
      expect(path('/%252e%252e/%2561')).toBe('/%252e%252e/%2561');
    });

    it('keeps an encoded slash encoded and says so', () => {
      expect(normalizeRequestTarget('/a%2fb')).toMatchObject({ path: '/a%2Fb', encodedSlash: true });
      expect(normalizeRequestTarget('/a%2Fb')).toMatchObject({ path: '/a%2Fb', encodedSlash: true });
      expect(normalizeRequestTarget('/a/b').encodedSlash).toBe(false);
    });

    it('refuses malformed escapes', () => {
      for (const raw of ['/%', '/a%2', '/%zz', '/%2g', '/%%41', '/a%']) {
        expect(refusal(raw), raw).toBe('malformed percent-encoding in path');
      }
    });

    it('refuses encoded control characters and backslashes', () => {
      expect(refusal('/a%00')).toBe('control character in path');
      expect(refusal('/a%0d%0aX-Injected:1')).toBe('control character in path');
      expect(refusal('/a%1F')).toBe('control character in path');
      expect(refusal('/a%7f')).toBe('control character in path');
      expect(refusal('/a%5cb')).toBe('backslash in path');
      expect(refusal('/a%5Cb')).toBe('backslash in path');
    });
  });

  describe('literal characters', () => {
    it('refuses control characters, backslashes and non-ASCII', () => {
      expect(refusal('/a\u0000b')).toBe('control character in path');
      expect(refusal('/a\tb')).toBe('control character in path');
      expect(refusal('/a\u007fb')).toBe('control character in path');
      expect(refusal('/a\\b')).toBe('backslash in path');
      expect(refusal('/caf\u00e9')).toBe('non-ASCII character in path');
      expect(refusal('/\u2025')).toBe('non-ASCII character in path');
    });

    it('percent-encodes printable characters a path cannot hold', () => {
      expect(path('/a b"<>[]^`{|}')).toBe('/a%20b%22%3C%3E%5B%5D%5E%60%7B%7C%7D');
    });
  });

  describe('slashes', () => {
    it('merges repeated slashes', () => {
      expect(path('//a///b//')).toBe('/a/b/');
      expect(path('//')).toBe('/');
    });

    it('does not merge an encoded slash with a literal one', () => {
      expect(path('/a/%2F/b')).toBe('/a/%2F/b');
    });
  });

  describe('dot segments', () => {
    it.each([
      ['/a/./b', '/a/b'],
      ['/a/b/../c', '/a/c'],
      ['/a/b/..', '/a/'],
      ['/a/b/../', '/a/'],
      ['/a/.', '/a/'],
      ['/a/..', '/'],
      ['/.', '/'],
      ['/a/%2e%2E/b', '/b'],
      ['/a/.%2e/b', '/b'],
      ['/a/%2e/b', '/a/b'],
      ['/a//../b', '/b'],
      ['/a/b/c/../../d/./e', '/a/d/e'],
    ])('resolves %s to %s', (raw, resolved) => {
      const target = normalizeRequestTarget(raw);
      expect(target.path).toBe(resolved);
      expect(target.dotSegments).toBe(true);
    });

    it('gives the unresolved path, decoded and merged, as rawPath', () => {
      expect(normalizeRequestTarget('/public//%2e%2E/admin')).toMatchObject({ path: '/admin', rawPath: '/public/../admin', dotSegments: true });
    });

    it('refuses a .. that climbs above the root', () => {
      expect(refusal('/..')).toBe('path climbs above the root');
      expect(refusal('/a/../../b')).toBe('path climbs above the root');
      expect(refusal('/%2e%2e/a')).toBe('path climbs above the root');
    });

    it('treats ; as an ordinary character', () => {
      expect(normalizeRequestTarget('/a;/../b')).toMatchObject({ path: '/b', rawPath: '/a;/../b', dotSegments: true });
      expect(normalizeRequestTarget('/a/;..').dotSegments).toBe(false);
    });

    it('refuses a dot segment carrying parameters, which servlet containers read as the dot segment', () => {
      expect(refusal('/a/..;/b')).toBe('dot segment with parameters');
      expect(refusal('/a/..;jsessionid=1/b')).toBe('dot segment with parameters');
      expect(refusal('/a/.;x/b')).toBe('dot segment with parameters');
      expect(refusal('/a/%2e%2e;/b')).toBe('dot segment with parameters');
      expect(path('/a/...;/b')).toBe('/a/...;/b');
    });
  });

  describe('length', () => {
    it(`accepts a path of ${MAX_PATH_LENGTH} characters and refuses a longer one`, () => {
      const longest = '/' + 'a'.repeat(MAX_PATH_LENGTH - 1);
      expect(path(longest)).toBe(longest);
      expect(refusal(longest + 'a')).toBe('path too long');
    });

    it('does not count the query', () => {
      expect(normalizeRequestTarget('/a?' + 'q'.repeat(MAX_PATH_LENGTH * 2)).path).toBe('/a');
    });
  });

  describe('on generated targets', () => {
    // A fixed-seed generator, so a failure is reproducible.
    let seed = 0x9e3779b9;
    const next = (n: number): number => {
      seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return seed % n;
    };
    const pieces = ['/', '//', '.', '..', '%2e', '%2E', '%2f', '%2F', '%25', '%41', '%7e', '%20', 'a', 'B', ';', '~', ' ', '|', '%', '%zz', '\\', '%5c', '%00'];
    const generated = Array.from({ length: 2000 }, () => '/' + Array.from({ length: 1 + next(12) }, () => pieces[next(pieces.length)]).join(''));

    it('gives a canonical path that normalises to itself, or refuses', () => {
      let accepted = 0;
      for (const raw of generated) {
        let target;
        try {
          target = normalizeRequestTarget(raw);
        } catch (error) {
          if (isGatehouseError(error) && error.code === 'invalid_request') continue;
          throw error;
        }
        accepted += 1;
        expect(target.path, raw).toMatch(/^\/(?:[A-Za-z0-9\-._~!$&'()*+,;=:@/]|%[0-9A-F]{2})*$/);
        expect(target.path, raw).not.toMatch(/\/\/|(?:^|\/)\.\.?(?:\/|$)/);
        const again = normalizeRequestTarget(target.path);
        expect(again, raw).toMatchObject({ path: target.path, query: '', encodedSlash: target.encodedSlash, dotSegments: false, rawPath: target.path });
        // Canonicalising never makes a path ambiguous.
        if (target.ambiguity === undefined) expect(again.ambiguity, raw).toBeUndefined();
      }
      expect(accepted).toBeGreaterThan(200);
    });
  });
});
