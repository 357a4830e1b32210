// The `$diagnoses` body of spec 2.4, the one shape every error response has.
import type { GatehouseError } from './errors.js';

export interface Diagnosis {
  $severity: 'error';
  $message: string;
  $detail: string;
}

export interface DiagnosticsBody {
  $diagnoses: Diagnosis[];
}

export function diagnosticsBody(error: GatehouseError): DiagnosticsBody {
  return {
    $diagnoses: [{ $severity: 'error', $message: error.publicMessage, $detail: error.detail }],
  };
}

/** The serialised body, for the paths that write to a raw socket or response. */
export function diagnosticsJson(error: GatehouseError): string {
  return JSON.stringify(diagnosticsBody(error));
}
