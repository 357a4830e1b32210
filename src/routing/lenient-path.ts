// How the most forgiving backend could read a path the gateway found ambiguous (`RequestTarget.ambiguity`): decoded
// until nothing is left, overlong UTF-8 taken, look-alikes folded (lookalikes.ts), `\` and a decoded `/` as
// separators, segments cut at `;` and NUL, trailing dots and spaces dropped, dot segments resolved.
//
// Invariants: a route with `strictPaths: false` passes an ambiguous path only while this reading stays in the same
// route; it runs only for such paths and paths NFKC changes, never on the hot path.
// Why: docs/decisions/0021-the-lenient-path-reading.md
import { foldLookalikes } from './lookalikes.js';

/** More rounds than any server decodes; each round shortens the text, so this only bounds the work. */
const MAX_DECODE_ROUNDS = 4;
const ESCAPE = /%[0-9A-Fa-f]{2}/;
/** Characters the canonical form keeps literal in a segment (request-target.ts: unreserved, sub-delims but `;`, `:` and `@`). */
const LITERAL = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/;

/** The path as the most forgiving reader sees it, in the canonical form routes are matched in. */
export function lenientReading(path: string): string {
  let text = path;
  // Folded after each round: `%EF%BC%85` is `％`, which folds into a `%` that the next round decodes.
  for (let round = 0; round < MAX_DECODE_ROUNDS && ESCAPE.test(text); round++) text = foldLookalikes(decodeOnce(text));
  const nul = text.indexOf('\0');
  if (nul !== -1) text = text.slice(0, nul);
  const kept: string[] = [];
  for (const raw of text.replaceAll('\\', '/').split('/')) {
    const semicolon = raw.indexOf(';');
    let segment = semicolon === -1 ? raw : raw.slice(0, semicolon);
    if (segment !== '.' && segment !== '..') segment = segment.replace(/[. ]+$/, '');
    if (segment === '' || segment === '.') continue;
    if (segment === '..')
      kept.pop(); // clamped at the root, as lenient servers do
    else kept.push(encodeSegment(segment));
  }
  return `/${kept.join('/')}`;
}

/**
 * A path with an encoded slash as a backend that decodes it once reads it:
 * `%2F` is a separator (doubled ones merged, as the gateway merges `//`).
 * Undefined when that reading has a dot segment (`..%2F`, `%2F.%2F`, and
 * `..;x` or `..%20` that Tomcat and IIS read as `..`): the gateway resolved
 * the dot segments it saw, so one that appears only once `%2F` is decoded is
 * there to climb past the route, or its `rewritePrefix`, in the backend.
 */
export function encodedSlashReading(path: string): string | undefined {
  if (DOT_SEGMENT.test(path)) return undefined;
  const reading = path.replace(ENCODED_SLASH, '/');
  return reading.includes('//') ? reading.replace(SLASHES, '/') : reading;
}

/** A segment that is `.` or `..` however a lenient server spells it (trailing dots or spaces, `;` parameters), between separators or at the end. */
const DOT_SEGMENT = /(?:\/|%2F)\.(?:\.|%20)*(?:$|\/|%2F|;|%3B)/i;
const ENCODED_SLASH = /%2F/gi;
const SLASHES = /\/{2,}/g;

/** One round of percent-decoding, the bytes read as UTF-8 that may be overlong. */
function decodeOnce(text: string): string {
  const source = Buffer.from(text, 'utf8');
  const bytes = Buffer.alloc(source.length);
  let length = 0;
  for (let i = 0; i < source.length; i++) {
    const hex = source[i] === 0x25 ? source.toString('latin1', i + 1, i + 3) : '';
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes[length++] = parseInt(hex, 16);
      i += 2;
    } else {
      bytes[length++] = source[i]!;
    }
  }
  return decodeUtf8Leniently(bytes.subarray(0, length));
}

/** UTF-8 that also takes overlong forms; anything else that is not UTF-8 becomes U+FFFD. */
function decodeUtf8Leniently(bytes: Buffer): string {
  let out = '';
  for (let i = 0; i < bytes.length;) {
    const lead = bytes[i]!;
    const extra = lead < 0x80 ? 0 : lead >= 0xc0 && lead < 0xe0 ? 1 : lead >= 0xe0 && lead < 0xf0 ? 2 : lead >= 0xf0 && lead < 0xf8 ? 3 : -1;
    let codePoint = extra <= 0 ? lead : lead & (0x3f >> extra);
    let valid = extra >= 0 && i + extra < bytes.length;
    for (let k = 1; valid && k <= extra; k++) {
      const next = bytes[i + k]!;
      valid = (next & 0xc0) === 0x80;
      codePoint = (codePoint << 6) | (next & 0x3f);
    }
    if (!valid || codePoint > 0x10ffff || (codePoint >= 0xd800 && codePoint <= 0xdfff)) {
      out += '\uFFFD';
      i += 1;
    } else {
      out += String.fromCodePoint(codePoint);
      i += extra + 1;
    }
  }
  return out;
}

function encodeSegment(segment: string): string {
  let out = '';
  for (const ch of segment) {
    if (LITERAL.test(ch)) out += ch;
    else for (const byte of Buffer.from(ch, 'utf8')) out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}
