// Turns the request target of an incoming request into the one canonical path
// that is routed, authenticated and forwarded. Routing and the upstream must
// see the same path: any disagreement between the gateway's idea of the path
// and the upstream's (`..`, `%2e%2e`, `//`, `\`) is a way around a route's
// auth. So the gateway never forwards what the client sent, only this.
//
// One pass over the path, no allocation unless something has to change (a path
// that is already canonical comes back as the very same string). Dot segments
// are resolved in a second, rare step.
import { gatehouseError } from '../core/errors.js';
import { isLookalike } from './lookalikes.js';

export interface RequestTarget {
  /** The canonical path: forwarded as is and the one a route is matched against. */
  readonly path: string;
  /** `''` or the query starting with `?`, exactly as the client sent it. */
  readonly query: string;
  /** The path holds a `%2F`: kept encoded, the route decides whether that is allowed. */
  readonly encodedSlash: boolean;
  /** The path held `.` or `..` segments (literal or encoded) that were resolved. */
  readonly dotSegments: boolean;
  /** The canonical path before dot segments were resolved; used to detect route escapes. */
  readonly rawPath: string;
  /**
   * Why some backend could read this path as another one (a `;` parameter,
   * double encoding, an escape that is not UTF-8, a segment ending in `.` or a
   * space), or undefined when every reader agrees on it. A route with
   * `strictPaths` refuses such a path with this reason.
   */
  readonly ambiguity: string | undefined;
  /** The path holds a percent-encoded character past ASCII, which a backend may fold (NFKC: `％`, `ａ`). */
  readonly nonAscii: boolean;
}

/** Longest path (as sent, before canonicalisation) the gateway accepts. */
export const MAX_PATH_LENGTH = 8 * 1024;

// Character classes of the path's literal characters (ASCII only; anything
// above 0x7E is refused before the table is consulted).
const PLAIN = 0; // pchar other than '.', ';' and '%': kept as is
const DOT = 1;
const SLASH = 2;
const PERCENT = 3;
const SEMICOLON = 4; // ordinary, but `..;` is how Tomcat & co. spell `..`
const ENCODE = 5; // printable, yet not allowed in a path: percent-encoded
const CONTROL = 6;
const BACKSLASH = 7;

const CLASS = new Uint8Array(128).fill(ENCODE);
for (let c = 0; c < 0x20; c++) CLASS[c] = CONTROL;
CLASS[0x7f] = CONTROL;
for (const ch of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~!$&'()*+,=:@") CLASS[ch.charCodeAt(0)] = PLAIN;
CLASS[0x2e] = DOT;
CLASS[0x2f] = SLASH;
CLASS[0x25] = PERCENT;
CLASS[0x3b] = SEMICOLON;
CLASS[0x5c] = BACKSLASH;

/** Octets whose escape is decoded (RFC 3986 2.3: unreserved characters). */
const UNRESERVED = new Uint8Array(256);
for (const ch of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~') UNRESERVED[ch.charCodeAt(0)] = 1;

/** `%XX` with uppercase hex for every octet, so no escape is built per request. */
const ESCAPE: readonly string[] = Array.from({ length: 256 }, (_, v) => `%${v.toString(16).toUpperCase().padStart(2, '0')}`);
const CHAR: readonly string[] = Array.from({ length: 128 }, (_, v) => String.fromCharCode(v));

// The ambiguities, each a way a common backend reads a path differently from us.
/** Tomcat, Jetty and Spring drop `;` parameters from a segment: `/admin;x` is `/admin` to them. */
const PARAMETERS = 'parameters (;) in path';
/** A backend that decodes twice reads `%2561dmin` as `admin`. */
const DOUBLE_ENCODING = 'double percent-encoding in path';
const ESCAPED_ESCAPE = /%25[0-9A-Fa-f]{2}/;
/** Lenient decoders read overlong forms (`%C0%AE` is `.`) and guess at invalid bytes. */
const NOT_UTF8 = 'percent-encoded bytes in path are not UTF-8';
/** IIS and Windows file systems drop trailing dots and spaces: `/admin.` is `/admin`. */
const SEGMENT_END = 'path segment ends in a dot or a space';
/** NFKC and best-fit readers turn U+FF0F, U+2215 & co. into `/`, `\\`, `.` or `%` (lookalikes.ts). */
const LOOKALIKE = 'path holds a Unicode look-alike of / \\ . or %';

/**
 * UTF-8 decoding state between escapes (Unicode table 3-7, so overlong forms,
 * surrogates and code points past U+10FFFF are invalid): 0 outside a
 * sequence, else `need << 16 | low << 8 | high`, the bytes still needed and
 * the range of the next one. -1: not UTF-8.
 */
function utf8Next(state: number, byte: number): number {
  if (state === 0) {
    if (byte < 0x80) return 0;
    if (byte >= 0xc2 && byte <= 0xdf) return (1 << 16) | (0x80 << 8) | 0xbf;
    if (byte >= 0xe0 && byte <= 0xef) return (2 << 16) | ((byte === 0xe0 ? 0xa0 : 0x80) << 8) | (byte === 0xed ? 0x9f : 0xbf);
    if (byte >= 0xf0 && byte <= 0xf4) return (3 << 16) | ((byte === 0xf0 ? 0x90 : 0x80) << 8) | (byte === 0xf4 ? 0x8f : 0xbf);
    return -1; // a continuation byte first, C0, C1 (always overlong) or F5–FF
  }
  if (byte < ((state >> 8) & 0xff) || byte > (state & 0xff)) return -1;
  const need = (state >> 16) - 1;
  return need === 0 ? 0 : (need << 16) | (0x80 << 8) | 0xbf;
}

/** A segment that ends in `.` or a space, other than the dot segments `.` and `..` (resolved instead). */
function endsAmbiguously(last: number, dots: number, other: boolean): boolean {
  return (last === 0x2e || last === 0x20) && (other || dots > 2);
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1; // also for NaN, i.e. past the end of the string
}

function refuse(reason: string): never {
  throw gatehouseError('invalid_request', { reason });
}

// Absolute-form (RFC 9112 3.2.2) as sent to proxies. Only the path is used:
// routing goes by the Host the caller passes, the upstream gets origin-form.
const ABSOLUTE_FORM = /^https?:\/\//i;

function pathOfAbsoluteForm(target: string): string {
  if (!ABSOLUTE_FORM.test(target)) refuse('request target is not a path');
  const authorityStart = target.indexOf('//') + 2;
  const slash = target.indexOf('/', authorityStart);
  const authorityEnd = slash === -1 ? target.length : slash;
  if (authorityEnd === authorityStart) refuse('request target is not a path');
  return slash === -1 ? '/' : target.slice(slash);
}

export function normalizeRequestTarget(rawUrl: string): RequestTarget {
  // A fragment never belongs in a request; whoever sends one is probing for a
  // parser that disagrees with ours about where the path ends.
  if (rawUrl.indexOf('#') !== -1) refuse('fragment in request target');

  const q = rawUrl.indexOf('?');
  let p = q === -1 ? rawUrl : rawUrl.slice(0, q);
  const query = q === -1 ? '' : rawUrl.slice(q);
  if (p.charCodeAt(0) !== 0x2f) p = pathOfAbsoluteForm(p);
  const len = p.length;
  if (len > MAX_PATH_LENGTH) refuse('path too long');

  // The canonical path is built lazily: `out` stays undefined while the input
  // needs no change; `from` is the first input character not yet in `out`.
  let out: string | undefined;
  let from = 0;
  let encodedSlash = false;
  let dotSegments = false;
  let prevSlash = false;
  // The current segment, as decoded: its count of dots and whether it holds anything else.
  let segDots = 0;
  let segOther = false;
  /** The current segment's last character, as decoded; 0 while it is empty. */
  let segLast = 0;
  let ambiguity: string | undefined;
  let utf8 = 0;
  /** The code point of the UTF-8 sequence being decoded, as far as it goes. */
  let codePoint = 0;
  let nonAscii = false;

  for (let i = 0; i < len;) {
    const c = p.charCodeAt(i);
    if (utf8 !== 0 && c !== 0x25) {
      ambiguity ??= NOT_UTF8; // a multi-byte sequence cut short
      utf8 = 0;
    }
    if (c > 0x7e) {
      // Node's parser already refuses these; a lenient one would leave us guessing the byte encoding.
      if (c === 0x7f) refuse('control character in path');
      refuse('non-ASCII character in path');
    }
    switch (CLASS[c]) {
      case PLAIN:
        segOther = true;
        segLast = c;
        prevSlash = false;
        i += 1;
        break;
      case DOT:
        segDots += 1;
        segLast = c;
        prevSlash = false;
        i += 1;
        break;
      case SLASH:
        if (prevSlash) {
          // Upstream frameworks disagree whether `//` is an empty segment; merge it.
          out = (out ?? '') + p.slice(from, i);
          from = i + 1;
        } else {
          if (!segOther && (segDots === 1 || segDots === 2)) dotSegments = true;
          if (endsAmbiguously(segLast, segDots, segOther)) ambiguity ??= SEGMENT_END;
          segDots = 0;
          segOther = false;
          segLast = 0;
          prevSlash = true;
        }
        i += 1;
        break;
      case PERCENT: {
        const hi = hexValue(p.charCodeAt(i + 1));
        const lo = hexValue(p.charCodeAt(i + 2));
        if (hi < 0 || lo < 0) refuse('malformed percent-encoding in path');
        const v = hi * 16 + lo;
        if (v < 0x20 || v === 0x7f) refuse('control character in path');
        if (v === 0x5c) refuse('backslash in path');
        if (v === 0x3b) ambiguity ??= PARAMETERS;
        else if (v === 0x25 && hexValue(p.charCodeAt(i + 3)) >= 0 && hexValue(p.charCodeAt(i + 4)) >= 0) ambiguity ??= DOUBLE_ENCODING;
        const first = utf8 === 0;
        utf8 = utf8Next(utf8, v);
        if (utf8 < 0) {
          ambiguity ??= NOT_UTF8;
          utf8 = 0;
        } else if (v > 0x7f) {
          // Lead byte: its payload bits (fewer the more bytes follow); then six per continuation byte.
          codePoint = first ? v & (0x3f >> (utf8 >> 16)) : (codePoint << 6) | (v & 0x3f);
          nonAscii = true;
          if (utf8 === 0 && isLookalike(codePoint)) ambiguity ??= LOOKALIKE;
        }
        segLast = v;
        if (UNRESERVED[v] === 1) {
          // `%2e%2e` is `..` and `/%61pi` is `/api`: decode so they are matched as such.
          out = (out ?? '') + p.slice(from, i) + CHAR[v]!;
          from = i + 3;
          if (v === 0x2e) segDots += 1;
          else segOther = true;
        } else {
          if (v === 0x2f) encodedSlash = true;
          segOther = true;
          // Only lowercase hex needs rewriting; an uppercase escape is already canonical.
          if (p.charCodeAt(i + 1) > 0x60 || p.charCodeAt(i + 2) > 0x60) {
            out = (out ?? '') + p.slice(from, i) + ESCAPE[v]!;
            from = i + 3;
          }
        }
        prevSlash = false;
        i += 3;
        break;
      }
      case SEMICOLON:
        // `/..;x/` is `..` to Tomcat and Jetty but an ordinary segment to us: refuse the disagreement.
        if (!segOther && (segDots === 1 || segDots === 2)) refuse('dot segment with parameters');
        ambiguity ??= PARAMETERS;
        segOther = true;
        segLast = c;
        prevSlash = false;
        i += 1;
        break;
      case ENCODE:
        out = (out ?? '') + p.slice(from, i) + ESCAPE[c]!;
        from = i + 1;
        segOther = true;
        segLast = c;
        prevSlash = false;
        i += 1;
        break;
      case CONTROL:
        return refuse('control character in path');
      default:
        // BACKSLASH: Windows servers and some frameworks read it as a separator.
        return refuse('backslash in path');
    }
  }
  if (!segOther && (segDots === 1 || segDots === 2)) dotSegments = true;
  if (endsAmbiguously(segLast, segDots, segOther)) ambiguity ??= SEGMENT_END;
  if (utf8 !== 0) ambiguity ??= NOT_UTF8;

  const canonical = out === undefined ? p : out + p.slice(from);
  // `%25%36%31` decodes to `%2561`, which the scan above could not see: `admin` to a backend that decodes twice.
  if (out !== undefined && canonical.includes('%25') && ESCAPED_ESCAPE.test(canonical)) ambiguity ??= DOUBLE_ENCODING;
  const path = dotSegments ? resolveDotSegments(canonical) : canonical;
  return { path, query, encodedSlash, dotSegments, rawPath: canonical, ambiguity, nonAscii };
}

/**
 * RFC 3986 5.2.4 on a path whose slashes are already merged, except that
 * climbing above the root is refused instead of clamped: nobody sends that by
 * mistake.
 */
function resolveDotSegments(path: string): string {
  const segments = path.split('/'); // segments[0] is the '' before the leading slash
  const kept: string[] = [];
  let trailingSlash = false;
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    trailingSlash = false;
    if (segment === '.') {
      trailingSlash = true;
    } else if (segment === '..') {
      if (kept.length === 0) refuse('path climbs above the root');
      kept.pop();
      trailingSlash = true;
    } else {
      kept.push(segment);
    }
  }
  const resolved = '/' + kept.join('/');
  return trailingSlash && kept.length > 0 ? resolved + '/' : resolved;
}
