// What every error the proxy answers must look like: the `$diagnoses` body,
// its status, never a 500 and never a stack trace.
import { expect } from 'vitest';
import { isGatehouseError, type GatehouseError } from '../../src/core/errors.js';
import type { LogSink } from './log-sink.js';

/** A stack trace, or a source location, in a response body. */
export const STACK_TRACE = /\n\s+at |\bat [\w.<>]+ \(|node:internal|\.[cm]?[jt]s:\d+|Error:/;

export function expectDiagnoses(status: number, body: Buffer | string, expectedStatus: number, detail: string | RegExp): void {
  const text = body.toString();
  expect(status).toBe(expectedStatus);
  expect(text).not.toMatch(STACK_TRACE);
  const parsed = JSON.parse(text) as unknown;
  expect(parsed).toEqual({
    $diagnoses: [{ $severity: 'error', $message: expect.any(String), $detail: detail instanceof RegExp ? expect.stringMatching(detail) : detail }],
  });
}

/** The status of every proxied request so far (the access log has one line per request). */
export function proxiedStatuses(logs: LogSink): unknown[] {
  return logs
    .entries()
    .filter((entry) => entry.kind === 'proxy')
    .map((entry) => entry.status);
}

/** No proxied request was answered with a 500. */
export function expectNoInternalErrors(logs: LogSink): void {
  expect(proxiedStatuses(logs)).not.toContain(500);
}

/** The Gatehouse error a promise rejects with (anything else fails the test). */
export async function gatehouseErrorOf(promise: Promise<unknown>): Promise<GatehouseError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!isGatehouseError(error)) throw new Error(`expected a Gatehouse error, got ${String(error)}`);
  return error;
}
