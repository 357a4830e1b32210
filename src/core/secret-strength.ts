// Whether a secret an operator configured (a service token, a sealing key, a
// client secret) could have come from a random generator, or was typed by a
// person: a placeholder word, one character or a short pattern repeated, or
// too few bits to resist guessing. A pure function of the text, so the
// schema, `check-config --production` and the commands that make secrets all
// judge alike. It never quotes the secret back, only the placeholder word.

/** The estimate below which a secret is refused: what a 128-bit key has. */
export const MIN_SECRET_BITS = 128;

/** What every refusal tells the operator to do instead. */
export const SECRET_ADVICE = 'make one with `openssl rand -base64 32`';

export type SecretVerdict = { strong: true; bits: number } | { strong: false; bits: number; weakness: string };

// Words people leave in a config for someone else to replace. Matched as whole
// words (split at anything not a letter or digit) written in one case or in
// title case (`changeme`, `CHANGEME`, `Changeme`), the long ones also as the
// start of a word (`changeme0123…`). A random base64 token still holds such a
// word (`XXX`, `demo`) about once in a million tries: it is refused, named.
const PLACEHOLDER_WORDS = new Set(
  (
    'replace replaceme change changeme changeit example sample secret password passwd placeholder ' +
    'your yours todo fixme dummy default insecure test tests testing demo'
  ).split(' '),
);
const PREFIX_MIN_LENGTH = 6;

// Alphabet sizes of the character classes: printable ASCII is 26 + 26 + 10 + 33.
const CHARACTER_CLASSES: ReadonlyArray<{ size: number; test: RegExp }> = [
  { size: 26, test: /[a-z]/ },
  { size: 26, test: /[A-Z]/ },
  { size: 10, test: /[0-9]/ },
  { size: 33, test: /[ -/:-@[-`{-~]/ },
  // Beyond ASCII: a generous guess, so that such secrets are judged by their length.
  { size: 128, test: /[^\x20-\x7e]/ },
];

/** Judges `secret`; `weakness` says why it is refused, never quoting the secret itself. */
export function judgeSecret(secret: string): SecretVerdict {
  const bits = estimatedBits(secret);
  const placeholder = placeholderWord(secret);
  if (placeholder !== undefined) return { strong: false, bits, weakness: `is a placeholder (${JSON.stringify(placeholder)}), not a secret` };
  const period = shortestPeriod(secret);
  if (period === 1) return { strong: false, bits, weakness: 'is one character repeated' };
  if (period !== undefined) return { strong: false, bits, weakness: `repeats a pattern of ${period} characters` };
  if (bits < MIN_SECRET_BITS) {
    return { strong: false, bits, weakness: `is too easy to guess (about ${Math.floor(bits)} bits estimated, ${MIN_SECRET_BITS} needed)` };
  }
  return { strong: true, bits };
}

/**
 * The estimate: surprising characters × log2(alphabet). The alphabet is the
 * sum of the classes the secret uses (lower case 26, upper case 26, digits 10,
 * other printable ASCII 33), as if each character had been drawn from it at
 * random; `openssl rand -base64 32` (44 characters, all four classes) scores
 * about 289 bits, `openssl rand -hex 16` (32 characters) about 165. A
 * character that continues a run of the one before (`aaaa`, `abcd`, `4321`:
 * the same step of 0 or ±1 code points as the step before it) surprises nobody
 * and counts nothing: a person's `0123456789` is worth two characters, not ten.
 * Words still score as random letters, which is why placeholder words are
 * refused on their own.
 */
export function estimatedBits(secret: string): number {
  const characters = [...secret];
  const alphabet = CHARACTER_CLASSES.filter((c) => characters.some((ch) => c.test.test(ch))).reduce((sum, c) => sum + c.size, 0);
  if (alphabet === 0) return 0;
  const codes = characters.map((ch) => ch.codePointAt(0)!);
  let surprising = 0;
  codes.forEach((code, i) => {
    const step = i === 0 ? undefined : code - codes[i - 1]!;
    const previousStep = i < 2 ? undefined : codes[i - 1]! - codes[i - 2]!;
    if (!(step !== undefined && step === previousStep && Math.abs(step) <= 1)) surprising++;
  });
  return surprising * Math.log2(alphabet);
}

function placeholderWord(secret: string): string | undefined {
  for (const written of secret.split(/[^\p{L}\p{N}]+/u)) {
    const word = written.toLowerCase();
    const titled = word.charAt(0).toUpperCase() + word.slice(1);
    if (written !== word && written !== written.toUpperCase() && written !== titled) continue; // mixed case: no person's placeholder
    if (PLACEHOLDER_WORDS.has(word)) return word;
    if (/^x{3,}$/.test(word)) return 'xxx';
    // The longest that fits: `changeme…` is named as `changeme`, not `change`.
    const prefixes = [...PLACEHOLDER_WORDS].filter((p) => p.length >= PREFIX_MIN_LENGTH && word.startsWith(p));
    if (prefixes.length > 0) return prefixes.reduce((a, b) => (b.length > a.length ? b : a));
  }
  return undefined;
}

/** The length of the unit the whole secret repeats at least twice (`abcabcab`: 3), if it does. */
function shortestPeriod(secret: string): number | undefined {
  const characters = [...secret];
  for (let period = 1; period * 2 <= characters.length; period++) {
    if (characters.every((ch, i) => i < period || ch === characters[i - period])) return period;
  }
  return undefined;
}
