// URLs as they are logged: every parameter that may carry a credential is
// masked, in the query and in a path's `;` parameters, whatever the case or
// percent-encoding of its name, and so is anything shaped like one of our
// credentials (a JWT, an API key) wherever it stands. The rest of the URL is
// kept: it is what one debugs with.
//
// Runs for every access line, so a URL with nothing to mask costs a few
// indexOf calls and comes back as the very same string.
import { API_KEY_PREFIX } from '../users/api-keys.js';

export const REDACTED = '[REDACTED]';

/** Parameter names holding one of these anywhere are credentials (`access_token`, `X-Amz-Signature`, `PHPSESSID`, `oauth_verifier`…). */
const SECRET_NAME_PART = /token|pass|secret|key|code|assertion|credential|signature|auth|bearer|jwt|session|sessid|cookie/i;
/** Names too short to look for inside other words: they count as a whole word only (`sid`, `X-Sig`, `user_pwd`, `userPw`). */
const SECRET_NAME_WORDS: ReadonlySet<string> = new Set(['sid', 'sig', 'pw', 'pwd', 'pin', 'otp']);
/** Whether a name may hold one of SECRET_NAME_WORDS at all: most names do not, and skip the split into words. */
const SECRET_WORD_HINT = /sid|sig|pw|pin|otp/i;

/** A JWT (`eyJ…` header and payload) or a Gatehouse API key, spelt out anywhere in the URL. */
const CREDENTIAL_SHAPE = new RegExp(`eyJ[\\w-]*\\.[\\w-]+\\.[\\w-]*|${API_KEY_PREFIX}[0-9a-fA-F]{16}_[\\w-]+`, 'g');

/** Anything that may need masking: a query, a parameter, a token or key. Most URLs hold none and come back at once. */
const MAY_HOLD_CREDENTIALS = new RegExp(`[?;]|%3[Bb]|eyJ|${API_KEY_PREFIX}`);

/** Where a path's parameters start: `;`, also encoded (a backend may decode it before splitting). */
const PARAMETER_SEPARATOR = /;|%3[Bb]/;

const MAX_DECODE_ROUNDS = 3;

/** The user info of an absolute-form target (`http://user:password@host/…`). */
const USER_INFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/?#]*@/;

/** The URL as logged: credential-like parameter values masked, the rest kept for debugging. */
export function redactUrl(url: string): string {
  let out = url.charCodeAt(0) === 0x2f ? url : url.replace(USER_INFO, `$1${REDACTED}@`);
  if (!MAY_HOLD_CREDENTIALS.test(out)) return out;
  if (out.indexOf('eyJ') !== -1 || out.indexOf(API_KEY_PREFIX) !== -1) out = out.replace(CREDENTIAL_SHAPE, REDACTED);
  const q = out.indexOf('?');
  const path = q === -1 ? out : out.slice(0, q);
  const maskedPath = PARAMETER_SEPARATOR.test(path) ? path.split('/').map(maskSegmentParameters).join('/') : path;
  if (q === -1) return maskedPath;
  return `${maskedPath}?${maskPairs(out.slice(q + 1))}`;
}

/** `name;p=v;q=w`: the name stays, the parameters are masked like query pairs. */
function maskSegmentParameters(segment: string): string {
  const match = PARAMETER_SEPARATOR.exec(segment);
  if (match === null) return segment;
  return segment.slice(0, match.index) + match[0] + maskPairs(segment.slice(match.index + match[0].length));
}

/** Pairs split at `&`, and at `;` (raw or encoded) as some frameworks do; the text comes back unchanged when nothing is masked. */
function maskPairs(text: string): string {
  let out: string | undefined;
  let copied = 0;
  let start = 0;
  for (let i = 0; i <= text.length; i++) {
    const c = text.charCodeAt(i); // NaN past the end: the last pair ends there
    const separator =
      c === 0x26 || c === 0x3b || i === text.length ? 1 : c === 0x25 && text.charCodeAt(i + 1) === 0x33 && (text.charCodeAt(i + 2) | 0x20) === 0x62 ? 3 : 0;
    if (separator === 0) continue;
    const pair = text.slice(start, i);
    const masked = maskPair(pair);
    if (masked !== pair) {
      out = (out ?? '') + text.slice(copied, start) + masked;
      copied = i;
    }
    start = i + separator;
    i = start - 1;
  }
  return out === undefined ? text : out + text.slice(copied);
}

function maskPair(pair: string): string {
  const eq = pair.indexOf('=');
  if (eq !== -1) return isCredentialName(pair.slice(0, eq)) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
  if (pair.indexOf('%') === -1) return pair;
  // `token%3Dabc`: a backend that decodes before splitting reads `token=abc`.
  const decoded = decodeFully(pair);
  const decodedEq = decoded.indexOf('=');
  return decodedEq !== -1 && isCredentialName(decoded.slice(0, decodedEq)) ? REDACTED : pair;
}

function isCredentialName(raw: string): boolean {
  const name = raw.indexOf('%') === -1 && raw.indexOf('+') === -1 ? raw : decodeFully(raw);
  if (SECRET_NAME_PART.test(name)) return true;
  if (!SECRET_WORD_HINT.test(name)) return false;
  // Words: split at anything not a letter or digit, and where camelCase turns upper.
  for (const word of name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)) {
    if (SECRET_NAME_WORDS.has(word)) return true;
  }
  return false;
}

/** Percent-decoding until nothing is left to decode (`%2570` is `p` to a backend that decodes twice); `+` is a space. */
function decodeFully(text: string): string {
  let decoded = text.replaceAll('+', ' ');
  for (let round = 0; round < MAX_DECODE_ROUNDS && decoded.includes('%'); round++) {
    const next = decoded.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    if (next === decoded) break;
    decoded = next;
  }
  return decoded;
}
