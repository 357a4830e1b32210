// The small pieces every part of the config schema is built from, and the two
// `when` conditions its content checks run under.
import { z } from 'zod';
import { judgeSecret, SECRET_ADVICE } from '../core/secret-strength.js';

export const port = z.number().int().min(0).max(65_535);
export const positiveInt = z.number().int().positive();
export const nonNegativeInt = z.number().int().nonnegative();
export const host = z.string().min(1);

export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' });

export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

export const headerName = z.string().regex(/^[A-Za-z0-9-]+$/, { error: 'must be an HTTP header name (letters, digits, -)' });

/**
 * What a required field is and a value it could take, kept in the field's
 * metadata (`.meta(help(…))`): a config that leaves it out is told
 * `<field> is required: <what>, e.g. <example>` (config-load/load.ts reads it),
 * so an operator writing a config from scratch learns each field from its error.
 */
export interface FieldHelp {
  what: string;
  example: string;
}
// Inferred, not FieldHelp: zod's `.meta()` takes only types with an index signature.
export const help = (what: string, example: string) => ({ what, example }) satisfies FieldHelp;

/** For zod's `when`: judge the list even when some entries failed their own checks. */
export const always = (): boolean => true;
/** For zod's `when`: only a value the schema found no fault with (else the same fault would be told twice). */
export const withoutIssues = (payload: { issues: readonly unknown[] }): boolean => payload.issues.length === 0;

/**
 * A secret Gatehouse holds in plain text (a bearer, a sealing key): at least
 * 32 characters, and none a person made up (core/secret-strength.ts).
 */
export const strongSecret = z
  .string()
  .min(32, { error: 'must be at least 32 characters' })
  .superRefine(
    (secret, ctx) => {
      const verdict = judgeSecret(secret);
      if (!verdict.strong) ctx.addIssue({ code: 'custom', message: `${verdict.weakness}: ${SECRET_ADVICE}` });
    },
    { when: withoutIssues },
  );

/** An `acr` value (OIDC Core 2) as RFC 9470's challenge quotes it: no spaces, quotes or backslashes. */
export const acrValue = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'an acr value has no spaces, quotes or backslashes');
