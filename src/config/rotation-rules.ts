// The settings that let a secret be rotated without an outage come in pairs:
// a previous service token is accepted beside the current one, and the
// seal's next or previous secret beside the one that seals. Either alone,
// without the one it stands beside, would be a rotation half done: refused
// at start, with the field that is missing. Pure, run by the schema.
import type { z } from 'zod';

type Issues = z.core.$ZodRawIssue[];

interface RotationSecrets {
  requests: { serviceToken?: string | undefined; serviceTokenPrevious?: string | undefined };
  tokens: { keySealSecret?: string | undefined; keySealSecretNext?: string | undefined; keySealSecretPrevious?: string | undefined };
}

export function checkRotationSecrets({ requests, tokens }: RotationSecrets, issues: Issues): void {
  if (requests.serviceTokenPrevious !== undefined && requests.serviceToken === undefined) {
    const message = 'needs requests.serviceToken (GATEHOUSE_SERVICE_TOKEN): the previous token is accepted beside the current one, never alone';
    issues.push({ code: 'custom', path: ['requests', 'serviceTokenPrevious'], message, input: undefined });
  }
  // Without a secret that seals, entries are not sealed at all: another secret to accept means nothing.
  const sealing = tokens.keySealSecret ?? requests.serviceToken;
  if (sealing !== undefined) return;
  for (const field of ['keySealSecretNext', 'keySealSecretPrevious'] as const) {
    if (tokens[field] === undefined) continue;
    const message = 'needs tokens.keySealSecret (GATEHOUSE_KEY_SEAL_SECRET) or requests.serviceToken: the secret that seals the published keys';
    issues.push({ code: 'custom', path: ['tokens', field], message, input: undefined });
  }
}
