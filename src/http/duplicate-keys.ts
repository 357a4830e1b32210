// JSON.parse keeps the last of two equal keys without a word, and a reviver
// only ever sees the survivor: `{"password":"a","password":"b"}` is read as
// "b" here while a proxy, a WAF or a log in front may have read "a". So the
// text itself is scanned, once, after JSON.parse accepted it: a single pass
// that looks at structure only (braces, brackets, commas and where strings
// end), with one Set of keys per object that is open at that moment.
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const COMMA = 0x2c;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The first key that appears twice in one object, at any depth, or undefined.
 * `text` must be JSON that JSON.parse accepted: the scan trusts its structure.
 * Keys are compared as JSON.parse reads them, escapes decoded.
 */
export function findDuplicateKey(text: string): string | undefined {
  // An object needs a `{`; for a body without one the scan is one indexOf.
  if (text.indexOf('{') === -1) return undefined;
  /** Per open container: the keys of an object, null for an array. */
  const open: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case OPEN_OBJECT:
        open.push(new Set());
        expectKey = true;
        break;
      case OPEN_ARRAY:
        open.push(null);
        expectKey = false;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        open.pop();
        expectKey = false;
        break;
      case COMMA:
        expectKey = open[open.length - 1] != null;
        break;
      case QUOTE: {
        const end = stringEnd(text, i);
        if (expectKey) {
          const raw = text.slice(i + 1, end);
          const key = raw.indexOf('\\') === -1 ? raw : (JSON.parse(text.slice(i, end + 1)) as string);
          const keys = open[open.length - 1]!;
          if (keys.has(key)) return key;
          keys.add(key);
          expectKey = false;
        }
        i = end;
        break;
      }
      default:
      // whitespace, `:`, numbers, true, false, null: nothing to track
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opened at `start`: the first one not escaped by an odd run of backslashes. */
function stringEnd(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length; // not JSON after all: end the scan rather than loop
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
    from = quote + 1;
  }
}
