// Path normalisation: `normalizeRequestTarget` on any string, and any request
// target sent raw through the proxy. The canonical path must be canonical
// (normalising it again changes nothing), mean what the client's path meant,
// and be what the upstream receives; a public route must never lead to a
// protected one; anything refused is a 400 `$diagnoses`. Never a 500, a crash
// or a hang.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isGatehouseError } from '../../src/core/errors.js';
import { lenientReading } from '../../src/routing/lenient-path.js';
import { normalizeRequestTarget, type RequestTarget } from '../../src/routing/request-target.js';
import { rawExchange } from '../helpers/raw-exchange.js';
import { expectDiagnoses, expectNoServerErrors, failOnCrashes, fuzz, fuzzBench, fuzzTimeout } from './support.js';

failOnCrashes();
const bench = fuzzBench();

/** Pieces of paths that have fooled path handling somewhere: dots, encodings, separators, parameters… */
const PIECES = [
  '/',
  '//',
  '.',
  '..',
  '%2e',
  '%2E',
  '%2e%2e',
  '.%2e',
  '%2f',
  '%2F',
  ';',
  ';x=1',
  'public',
  'svc',
  'PUBLIC',
  'a',
  '~',
  '%7e',
  '%41',
  '%61%62',
  '%C3%A9',
  '%c3%a9',
  // Unicode look-alikes a backend folds into `/`, `\`, `.` or `%` (NFKC, best-fit), and a fullwidth letter.
  '%EF%BC%8F',
  '%e2%88%95',
  '%EF%BC%BC',
  '%EF%BC%8E',
  '%E2%80%A4',
  '%EF%BC%85',
  '%EF%BD%93',
  '"',
  '<',
  '{',
  '|',
  '^',
  '`',
  ' ',
  '&',
  '=',
  '@',
  ':',
  '*',
  "'",
  '%20',
  '%25',
  '%3F',
  '%23',
  'api/v1/auth/',
  'api/v1/requests/',
  'v1/requests/',
  'oauth/',
  '.well-known/',
];
/** …and pieces that are always refused: rarer, so that most targets get through to the checks on what is made of them. */
const REFUSED_PIECES = ['%5c', '%5C', '\\', '%00', '%0a', '%7f', '%', '%zz', '%4', '..;', '.;', '\u00e9', '\t'];
const START = ['/', '/public/', '/svc/', '/public', 'http://h/public/', 'HTTPS://x', 'http://', '*', ''];
const piece = fc.oneof({ weight: 12, arbitrary: fc.constantFrom(...PIECES) }, { weight: 1, arbitrary: fc.constantFrom(...REFUSED_PIECES) });

/** One route's prefix, a way up spelled some way, another route's prefix (or none): the shape of a path trick. */
const pathTrick = fc
  .tuple(
    fc.constantFrom('/public', '/svc', '/PUBLIC', ''),
    fc.constantFrom(
      '/..',
      '/%2e%2e',
      '/.%2E',
      '/./..',
      '//..',
      '/x/../..',
      '/..;',
      '/..%2f',
      '/x%EF%BC%8F..%EF%BC%8F..',
      '/%EF%BC%8E%EF%BC%8E',
      '/..%E2%88%95..',
    ),
    fc.constantFrom('/public', '/svc', '/%EF%BD%93vc', '/api/v1/auth', ''),
    fc.array(piece, { maxLength: 3 }),
  )
  .map(([from, up, to, rest]) => `${from}${up}${to}${rest.join('')}`);

/** A request target built from those pieces, with an optional query; a path trick; or, now and then, any string. */
const target = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .tuple(
        fc.constantFrom(...START),
        fc.array(piece, { maxLength: 10 }),
        fc.option(fc.array(fc.constantFrom('?', '#', '/', '..', '%2e', '=', '&', 'x'), { maxLength: 4 }), { nil: undefined }),
      )
      .map(([start, pieces, query]) => `${start}${pieces.join('')}${query === undefined ? '' : `?${query.join('')}`}`),
  },
  { weight: 3, arbitrary: pathTrick },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 30 }) },
);

/** Normalised, or null when refused (as a 400 invalid_request; anything else thrown fails). */
function normalised(raw: string): RequestTarget | null {
  try {
    return normalizeRequestTarget(raw);
  } catch (error) {
    expect(isGatehouseError(error) && error.code === 'invalid_request' && error.status === 400, String(error)).toBe(true);
    return null;
  }
}

/**
 * What a path means, as RFC 3986 reads it: segments with every escape but
 * `%2F` decoded, empty segments merged, `.` and `..` resolved. Null when it
 * climbs above the root.
 */
function meaning(path: string): string | null {
  const out: string[] = [];
  const segments = path.split('/').slice(1);
  for (const [i, raw] of segments.entries()) {
    const last = i === segments.length - 1;
    if (raw === '' && !last) continue;
    const segment = raw.replace(/%([0-9a-f]{2})/gi, (escape, hex: string) => (hex.toLowerCase() === '2f' ? '%2F' : String.fromCharCode(parseInt(hex, 16))));
    if (segment === '.' || segment === '..') {
      if (segment === '..' && out.pop() === undefined) return null;
      if (last) out.push('');
      continue;
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

const PCHAR_OR_SLASH = /[A-Za-z0-9\-._~!$&'()*+,;=:@/]/;
const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** RFC 3986 pchars and `/`; escapes in upper case, never of an unreserved character, `\\` or a control character. */
function isCanonical(path: string): boolean {
  if (!path.startsWith('/')) return false;
  for (let i = 0; i < path.length; i++) {
    if (path[i] !== '%') {
      if (!PCHAR_OR_SLASH.test(path[i]!)) return false;
      continue;
    }
    const hex = path.slice(i + 1, i + 3);
    const value = parseInt(hex, 16);
    if (!/^[0-9A-F]{2}$/.test(hex) || value < 0x20 || value === 0x7f || value === 0x5c || UNRESERVED.test(String.fromCharCode(value))) return false;
    i += 2;
  }
  return true;
}

/** Route prefixes match without regard to ASCII case (a path that case-folds into a route is that route's). */
const under = (path: string, prefix: string) => {
  const folded = path.toLowerCase();
  return folded === prefix || folded.startsWith(`${prefix}/`);
};

describe('normalizeRequestTarget', () => {
  it('returns a canonical path that means what the client wrote, or refuses with 400', () => {
    fuzz(
      fc.property(target, (raw) => {
        const result = normalised(raw);
        if (result === null) return;
        const { path, query, encodedSlash } = result;
        expect(isCanonical(path), path).toBe(true);
        expect(path).not.toMatch(/\/\/|\/\.\.?(?:\/|$)/);
        // Canonical: normalising it again changes nothing. (An encoded slash that a `..` removed
        // still counts for the original: refusing it there errs on the safe side.)
        const again = normalizeRequestTarget(path + query);
        expect(again).toMatchObject({ path, query, encodedSlash: path.includes('%2F'), dotSegments: false, rawPath: path });
        if (again.encodedSlash) expect(encodedSlash).toBe(true);
        const q = raw.indexOf('?');
        expect(query).toBe(q === -1 ? '' : raw.slice(q));
        // The same meaning as the client's path (origin form; absolute form keeps only its path).
        if (raw.startsWith('/')) expect(meaning(path)).toBe(meaning(q === -1 ? raw : raw.slice(0, q)));
      }),
    );
  });

  it('refuses any path longer than the limit', () => {
    fuzz(
      fc.property(fc.integer({ min: 8 * 1024 + 1, max: 20_000 }), fc.constantFrom('a', '/', '%41', '.'), (length, piece) => {
        expect(normalised(`/${piece.repeat(length)}`.slice(0, length))).toBeNull();
      }),
    );
  });
});

/**
 * Sends `raw` as the request target, without a token: the answer must be the
 * public upstream's, with the canonical path, for a path that names /public
 * and stays there; a 4xx diagnoses body, and nothing forwarded, otherwise.
 */
async function expectThroughProxy(raw: string): Promise<void> {
  const { gw, upstream } = bench();
  const before = upstream.seen.length;
  const { status, headers, body } = await rawExchange(gw.url, [`GET ${raw} HTTP/1.1`, `host: ${new URL(gw.url).host}`, 'connection: close']);
  const seen = upstream.seen.slice(before);
  // Node's parser takes spaces before ` HTTP/1.1` as the separator, not as part of the target.
  const expected = normalised(raw.replace(/ +$/, ''));
  if (status === 200) {
    // The only route open without a token is /public, and it gets the canonical path.
    expect(seen).toHaveLength(1);
    expect(expected).not.toBeNull();
    expect(seen[0]!.url).toBe(expected!.path + expected!.query);
    expect(under(expected!.path, '/public')).toBe(true);
    // …and the client named /public too: a `..` never leads from another route into it.
    expect(under(expected!.rawPath, '/public')).toBe(true);
    // …and a backend that decodes and folds look-alikes (`／` is `/`, `ｓ` is `s`) reads it under /public as well.
    expect(under(lenientReading(expected!.path), '/public')).toBe(true);
  } else {
    expect(seen).toHaveLength(0);
    expectDiagnoses({ status, headers, body: Buffer.from(body, 'utf8') }, [400, 401, 404]);
    // A path that is and stays under /public, with nothing refused in it (strict paths refuse an ambiguous one), goes through
    // (unless Node's own parser refused the request line first: 400 too).
    if (
      expected !== null &&
      under(expected.path, '/public') &&
      under(expected.rawPath, '/public') &&
      !expected.encodedSlash &&
      expected.ambiguity === undefined &&
      under(lenientReading(expected.path), '/public')
    ) {
      expect(status, body).toBe(400);
      expect(body).toContain('the request is not valid HTTP/1.1');
    }
  }
}

describe('request targets through the proxy, without a token', () => {
  it('reach the public upstream with the canonical path, never the protected route, and are otherwise refused', { timeout: fuzzTimeout() }, async () => {
    await fuzz(fc.asyncProperty(target, expectThroughProxy));
    expectNoServerErrors(bench().gw);
  });

  it('never cross from one route into the other with a way up, however it is spelled', { timeout: fuzzTimeout() }, async () => {
    await fuzz(fc.asyncProperty(pathTrick, expectThroughProxy));
    expectNoServerErrors(bench().gw);
  });
});

describe('found by fuzzing: a URL the router cannot decode', () => {
  // Found by the end-to-end property above: Fastify answered a malformed escape on a gateway
  // path with its own error JSON ({"error":"Bad Request","code":"FST_ERR_BAD_URL",…}),
  // not the diagnostics body, on both listeners.
  it.each(['/api/v1/auth/%zz', '/oauth/%', '/api/v1/requests/%E0%A4%A/status', '/.well-known/%zz'])(
    'on the public listener gets a 400 diagnoses body (%s)',
    async (path) => {
      const { gw } = bench();
      const answer = await rawExchange(gw.url, [`GET ${path} HTTP/1.1`, 'host: 127.0.0.1', 'connection: close']);
      expect(expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400])).toBe('400 (Bad Request) - invalid_request: the URL is malformed');
    },
  );

  it('on the admin listener gets a 400 diagnoses body', async () => {
    const { gw } = bench();
    const answer = await rawExchange(gw.adminUrl!, [
      'PUT /internal/v1/requests/%zz/status HTTP/1.1',
      'host: 127.0.0.1',
      'connection: close',
      'content-length: 0',
    ]);
    expect(expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400])).toBe('400 (Bad Request) - invalid_request: the URL is malformed');
  });

  it('with a request id longer than the router takes gets a 4xx diagnoses body', async () => {
    const { gw } = bench();
    const answer = await rawExchange(gw.adminUrl!, [
      `PUT /internal/v1/requests/${'a'.repeat(200)}/status HTTP/1.1`,
      'host: 127.0.0.1',
      'connection: close',
      'content-length: 0',
    ]);
    expectDiagnoses({ ...answer, body: Buffer.from(answer.body, 'utf8') }, [400, 401, 404]);
  });
});
