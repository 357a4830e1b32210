// Issue 22, paths: with strict paths, a Unicode character that a backend folds
// into `/`, `\`, `.` or `%` is refused. `/site/admin%EF%BC%8Fusers` is one
// segment of the public `/site` route here and `/site/admin/users` to a server
// that applies NFKC or Windows best-fit; `/public/..%EF%BC%8Fprivate/x` is
// `/private/x` to it. A route without strict paths folds them the same way
// before deciding whether the path stays in the route.
import { describe, expect, it } from 'vitest';
import { RouteSchema, type RouteConfig } from '../../src/config/schema.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { lenientReading } from '../../src/routing/lenient-path.js';
import { BEST_FIT, NFKC_LOOKALIKES, foldLookalikes, isLookalike } from '../../src/routing/lookalikes.js';
import { normalizeRequestTarget } from '../../src/routing/request-target.js';
import { RouteTable, resolveRoute } from '../../src/routing/route-table.js';

const LOOKALIKE = 'path holds a Unicode look-alike of / \\ . or %';

/** The code point percent-encoded as UTF-8, in upper-case hex. */
const escaped = (codePoint: number): string => encodeURIComponent(String.fromCodePoint(codePoint));

function route(fields: { prefix: string } & Partial<Omit<RouteConfig, 'prefix'>>): RouteConfig {
  return RouteSchema.parse({ upstreams: ['http://127.0.0.1:1'], ...fields });
}

const table = RouteTable.compile([
  route({ prefix: '/public', name: 'public', auth: 'none' }),
  route({ prefix: '/private', name: 'private' }),
  route({ prefix: '/site', name: 'site', auth: 'none' }),
  route({ prefix: '/site/admin', name: 'site-admin' }),
  route({ prefix: '/legacy', name: 'legacy', auth: 'none', strictPaths: false }),
  route({ prefix: '/legacy/admin', name: 'legacy-admin', strictPaths: false }),
]);

function resolve(rawUrl: string): string {
  try {
    const resolved = resolveRoute(table, 'GET', undefined, rawUrl);
    return `${resolved.route.name} ${resolved.upstreamPath}`;
  } catch (error) {
    if (isGatehouseError(error)) return `${error.status} ${error.code}: ${error.reason}`;
    throw error;
  }
}

describe('the look-alike table', () => {
  it('holds exactly the code points whose NFKC form has / \\ . or %, over every plane', () => {
    const derived: number[] = [];
    for (let cp = 0x80; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (/[/\\.%]/.test(String.fromCodePoint(cp).normalize('NFKC'))) derived.push(cp);
    }
    expect(derived.map((cp) => cp.toString(16))).toEqual(NFKC_LOOKALIKES.map((cp) => cp.toString(16)));
  });

  it('maps each best-fit character to one of the four, and none of them is NFKC-folded already', () => {
    for (const [cp, ascii] of BEST_FIT) {
      expect(['/', '\\', '.', '%'], cp.toString(16)).toContain(ascii);
      expect(NFKC_LOOKALIKES, cp.toString(16)).not.toContain(cp);
    }
  });

  it('is what the path normaliser refuses: every BMP code point, and the look-alikes past it', () => {
    const flagged: number[] = [];
    for (let cp = 0x80; cp <= 0xffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      if (normalizeRequestTarget(`/a${escaped(cp)}b`).ambiguity === LOOKALIKE) flagged.push(cp);
    }
    const expected = [...NFKC_LOOKALIKES, ...BEST_FIT.keys()].filter((cp) => cp <= 0xffff).sort((a, b) => a - b);
    expect(flagged).toEqual(expected);
    expect(normalizeRequestTarget(`/a${escaped(0x1f100)}`).ambiguity).toBe(LOOKALIKE);
    expect(normalizeRequestTarget(`/a${escaped(0x1f600)}`).ambiguity).toBeUndefined();
    expect(isLookalike(0x2f)).toBe(false); // ASCII never reaches the table: it is no look-alike of itself
  });

  it('folds as such a backend reads', () => {
    expect(foldLookalikes('admin\uFF0Fusers\u2215x\u2044y\u29F8z')).toBe('admin/users/x/y/z');
    expect(foldLookalikes('\uFF3C\u2216\uFE68\u00A5\u20A9')).toBe('\\\\\\\\\\');
    expect(foldLookalikes('\uFF0E\u2024\uFE52\u3002\uFF61\u2025')).toBe('.......');
    expect(foldLookalikes('\uFF05\uFE6A\u066A')).toBe('%%%');
  });
});

// Every spelling: the path, the code point it hides, and what a folding backend reads.
const SPELLINGS: Array<[string, string]> = [
  ['U+FF0F fullwidth solidus, as in the issue', '/public/..%EF%BC%8Fprivate/x'],
  ['U+FF0F in lower-case hex', '/public/..%ef%bc%8fprivate/x'],
  ['U+FF0F twice', '/public/x/..%EF%BC%8F..%EF%BC%8Fprivate'],
  ['U+2215 division slash, as in the issue', '/public/..%E2%88%95private/x'],
  ['U+2044 fraction slash', '/public/..%E2%81%84private/x'],
  ['U+29F8 big solidus', '/public/..%E2%A7%B8private/x'],
  ['U+2571 box-drawing diagonal', '/public/..%E2%95%B1private/x'],
  ['U+FF3C fullwidth reverse solidus', '/public/..%EF%BC%BCprivate/x'],
  ['U+FE68 small reverse solidus', '/public/..%EF%B9%A8private/x'],
  ['U+2216 set minus', '/public/..%E2%88%96private/x'],
  ['U+29F5 reverse solidus operator', '/public/..%E2%A7%B5private/x'],
  ['U+29F9 big reverse solidus', '/public/..%E2%A7%B9private/x'],
  ['U+00A5 yen sign (code page 932 backslash)', '/public/..%C2%A5private/x'],
  ['U+20A9 won sign (code page 949 backslash)', '/public/..%E2%82%A9private/x'],
  ['U+FF0E fullwidth full stop', '/public/%EF%BC%8E%EF%BC%8E/private/x'],
  ['U+FF0E beside an ASCII dot', '/public/.%EF%BC%8E/private/x'],
  ['U+2024 one dot leader', '/public/%E2%80%A4%E2%80%A4/private/x'],
  ['U+2025 two dot leader', '/public/%E2%80%A5/private/x'],
  ['U+2026 horizontal ellipsis', '/public/x%E2%80%A6'],
  ['U+FE52 small full stop', '/public/%EF%B9%92%EF%B9%92/private/x'],
  ['U+FE30 vertical two dot leader', '/public/%EF%B8%B0/private/x'],
  ['U+3002 ideographic full stop', '/public/%E3%80%82%E3%80%82/private/x'],
  ['U+FF61 halfwidth ideographic full stop', '/public/%EF%BD%A1%EF%BD%A1/private/x'],
  ['U+FF05 fullwidth percent, then 2e2e', '/public/%EF%BC%852e%EF%BC%852e/private/x'],
  ['U+FE6A small percent', '/public/%EF%B9%AA2e%EF%B9%AA2e/private/x'],
  ['U+066A arabic percent', '/public/%D9%AA2e%D9%AA2e/private/x'],
  ['U+2100 account of (a/c)', '/public/%E2%84%80'],
  ['U+2488 digit one full stop', '/public/x%E2%92%88'],
  ['U+33C2 a.m.', '/public/%E3%8F%82'],
  ['U+1F100 digit zero full stop (four bytes)', '/public/x%F0%9F%84%80'],
  ['U+FF0F under a public /site, as in the issue', '/site/admin%EF%BC%8Fusers'],
  ['U+2215 under a public /site', '/site/admin%E2%88%95users'],
];

describe('with strict paths, every look-alike spelling is refused', () => {
  it.each(SPELLINGS)('%s: %s', (_, path) => {
    expect(resolve(path)).toBe(`400 invalid_request: ${LOOKALIKE}`);
  });
});

describe('without strict paths, a look-alike that leads to another route is refused', () => {
  it.each([
    ['U+FF0F', '/legacy/admin%EF%BC%8Fusers'],
    ['U+2215', '/legacy/admin%E2%88%95users'],
    ['U+2044', '/legacy/admin%E2%81%84users'],
    ['U+FF3C', '/legacy/admin%EF%BC%BCusers'],
    ['U+FF0E', '/legacy/admin/x/%EF%BC%8E%EF%BC%8E/..%EF%BC%8F..%EF%BC%8Fprivate'],
    ['U+FF05 that decodes further', '/legacy/admin%EF%BC%852Fusers'],
    ['U+FF0F out of the route', '/legacy/..%EF%BC%8Fprivate/x'],
  ])('%s: %s', (_, path) => {
    expect(resolve(path)).toBe('400 invalid_request: path reads as another route');
  });

  it('one that stays in the route passes as sent', () => {
    expect(resolve('/legacy/a%EF%BC%8Fb')).toBe('legacy /legacy/a%EF%BC%8Fb');
    expect(resolve('/legacy/admin/a%E2%88%95..%E2%88%95b')).toBe('legacy-admin /legacy/admin/a%E2%88%95..%E2%88%95b');
  });

  it('the lenient reading folds them', () => {
    expect(lenientReading('/legacy/admin%EF%BC%8Fusers')).toBe('/legacy/admin/users');
    expect(lenientReading('/public/..%E2%88%95private/x')).toBe('/private/x');
    expect(lenientReading('/public/%EF%BC%852e%EF%BC%852e/private')).toBe('/private');
  });
});

describe('letters that fold into another route, refused on any route', () => {
  it.each([
    ['U+FF41 fullwidth a', '/site/%EF%BD%81dmin/users'],
    ['fullwidth ADMIN, case folded as routes are', '/site/%EF%BC%A1%EF%BC%A4%EF%BC%AD%EF%BC%A9%EF%BC%AE'],
    ['without strict paths', '/legacy/%EF%BD%81dmin'],
  ])('%s: %s', (_, path) => {
    expect(resolve(path)).toBe('400 invalid_request: path reads as another route');
  });

  it('one that folds into its own route passes as sent', () => {
    expect(resolve('/site/admin/%EF%BD%98')).toBe('site-admin /site/admin/%EF%BD%98');
    expect(resolve('/site/%EF%BD%98')).toBe('site /site/%EF%BD%98');
  });
});

describe('other non-ASCII text is not a look-alike', () => {
  it.each([
    ['é', '/public/caf%C3%A9'],
    ['€', '/public/%E2%82%AC'],
    ['あ', '/public/%E3%81%82'],
    ['😀', '/public/%F0%9F%98%80'],
    ['· middle dot', '/public/a%C2%B7b'],
    ['‰ per mille', '/public/100%E2%80%B0'],
  ])('%s passes', (_, path) => {
    expect(resolve(path)).toBe(`public ${path}`);
  });
});
