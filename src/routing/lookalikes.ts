// Unicode characters that some backend reads as `/`, `\`, `.` or `%`. A path
// that holds one (percent-encoded as UTF-8) means one thing to the gateway and
// another to a server that folds it: `/site/admin%EF%BC%8Fusers` is one
// segment here and `/site/admin/users` to a server that applies NFKC (Python's
// and Java's IDN and path libraries, ASP.NET) or Windows' best-fit conversion
// to an ANSI code page (the "WorstFit" family of bugs). Strict paths refuse
// them; `lenientReading` folds them.
//
// A table, not a computation at start-up: deriving the NFKC part takes 30 ms
// over the BMP and 250 ms over all planes, on every start. The test
// test/proxy/unicode-lookalikes.test.ts derives it again over every code point
// with String.prototype.normalize, so a Unicode update that adds one fails it.

/** Every code point whose NFKC form holds `/`, `\`, `.` or `%` (Unicode 15.1; ICU as shipped with Node 20). */
export const NFKC_LOOKALIKES: readonly number[] = [
  0x2024, 0x2025, 0x2026, 0x2100, 0x2101, 0x2105, 0x2106, 0x2488, 0x2489, 0x248a, 0x248b, 0x248c, 0x248d, 0x248e, 0x248f, 0x2490, 0x2491, 0x2492, 0x2493,
  0x2494, 0x2495, 0x2496, 0x2497, 0x2498, 0x2499, 0x249a, 0x249b, 0x33c2, 0x33c7, 0x33d8, 0xfe19, 0xfe30, 0xfe52, 0xfe68, 0xfe6a, 0xff05, 0xff0e, 0xff0f,
  0xff3c, 0x1f100,
];

/**
 * What other readers turn into one of the four, though NFKC leaves them be:
 * Windows' best-fit tables for the ANSI code pages (bestfit1252.txt and kin:
 * U+2215 and U+2044 become `/`, U+2216 `\`), the Japanese and Korean code
 * pages where the backslash's byte is the yen and won sign (so a Windows
 * path API reads U+00A5 and U+20A9 as a separator), UTS 46 (URL host
 * parsing) that reads the ideographic full stops as `.`, and the remaining
 * solidus and percent look-alikes that a best-fit table could map.
 */
export const BEST_FIT: ReadonlyMap<number, string> = new Map([
  [0x2215, '/'], // DIVISION SLASH
  [0x2044, '/'], // FRACTION SLASH
  [0x29f8, '/'], // BIG SOLIDUS
  [0x2571, '/'], // BOX DRAWINGS LIGHT DIAGONAL UPPER RIGHT TO LOWER LEFT
  [0x2216, '\\'], // SET MINUS
  [0x29f5, '\\'], // REVERSE SOLIDUS OPERATOR
  [0x29f9, '\\'], // BIG REVERSE SOLIDUS
  [0x2572, '\\'], // BOX DRAWINGS LIGHT DIAGONAL UPPER LEFT TO LOWER RIGHT
  [0x00a5, '\\'], // YEN SIGN: the backslash of code page 932
  [0x20a9, '\\'], // WON SIGN: the backslash of code page 949
  [0x3002, '.'], // IDEOGRAPHIC FULL STOP
  [0xff61, '.'], // HALFWIDTH IDEOGRAPHIC FULL STOP
  [0x066a, '%'], // ARABIC PERCENT SIGN
]);

// Every code point at or above U+0080 that any of the look-alikes is; the
// lowest one bounds the test so that most non-ASCII text never reaches the set.
const ALL = new Set<number>([...NFKC_LOOKALIKES, ...BEST_FIT.keys()]);
const LOWEST = Math.min(...ALL);

/** Whether some backend reads the code point as `/`, `\`, `.` or `%`. */
export function isLookalike(codePoint: number): boolean {
  return codePoint >= LOWEST && ALL.has(codePoint);
}

const BEST_FIT_PATTERN = new RegExp(`[${[...BEST_FIT.keys()].map((cp) => `\\u{${cp.toString(16)}}`).join('')}]`, 'gu');

/** The text as a server that folds compatibility characters and best-fits the rest reads it. */
export function foldLookalikes(text: string): string {
  return text.normalize('NFKC').replace(BEST_FIT_PATTERN, (ch) => BEST_FIT.get(ch.codePointAt(0)!)!);
}

/**
 * Whether a canonical path (valid UTF-8 escapes) reads differently once its
 * characters are NFKC-folded: the cheap test before `lenientReading` is asked
 * which route the folded path is (most non-ASCII text, in NFC, is unchanged).
 */
export function changesUnderFolding(path: string): boolean {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return true; // not UTF-8 after all: let the full reading decide
  }
  return decoded.normalize('NFKC') !== decoded;
}
