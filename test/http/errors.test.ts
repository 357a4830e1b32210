// The errors catalogue: every code renders a complete `$diagnoses` body.
import { STATUS_CODES } from 'node:http';
import { describe, expect, it } from 'vitest';
import { diagnosticsBody } from '../../src/core/diagnostics.js';
import { ERRORS, gatehouseError, type ErrorCode } from '../../src/core/errors.js';

describe('the errors catalogue', () => {
  it.each(Object.keys(ERRORS) as ErrorCode[])('%s renders a complete diagnostics body', (code) => {
    const error = gatehouseError(code);
    const body = diagnosticsBody(error);
    expect(body.$diagnoses).toHaveLength(1);
    const [d] = body.$diagnoses;
    expect(d!.$severity).toBe('error');
    expect(d!.$message.length).toBeGreaterThan(10);
    expect(d!.$detail).toBe(`${error.status} (${STATUS_CODES[error.status]}) - ${ERRORS[code].oauthError}: ${ERRORS[code].reason}`);
  });

  it('exposes client errors with their precise reason', () => {
    expect(gatehouseError('invalid_request', { reason: 'username must be string' }).detail).toBe(
      '400 (Bad Request) - invalid_request: username must be string',
    );
  });

  it('never exposes the reason of a server error', () => {
    const error = gatehouseError('internal_error', { reason: 'ECONNRESET at 10.0.0.7', cause: new Error('boom') });
    expect(error.expose).toBe(false);
    expect(error.detail).toBe('500 (Internal Server Error) - server_error: internal error');
    expect(error.cause).toBeInstanceOf(Error);
  });
});
