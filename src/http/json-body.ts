// The JSON body parser of the gateway's own endpoints. Same engine as
// Fastify's default (secure-json-parse), plus a refusal of duplicate keys,
// and each failure becomes a GatehouseError that tells the client what
// exactly is wrong.
import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { findDuplicateKey } from './duplicate-keys.js';
import { gatehouseError } from '../core/errors.js';

/** Enough of a key to recognise it in an error message. */
const MAX_KEY_IN_REASON = 64;

export function parseJsonBody(text: string): unknown {
  if (text.length === 0) throw gatehouseError('invalid_request', { reason: 'the JSON body is empty' });
  let parsed: unknown;
  try {
    parsed = sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const reason = /prototype/.test((error as Error).message)
      ? 'the JSON body holds a forbidden key (__proto__ or constructor.prototype)'
      : 'the body is not valid JSON';
    throw gatehouseError('invalid_request', { reason, cause: error });
  }
  // JSON.parse would keep the last of them; whoever read the body before us may have kept the first.
  const duplicate = findDuplicateKey(text);
  if (duplicate !== undefined) {
    throw gatehouseError('invalid_request', { reason: `the JSON body holds the key ${JSON.stringify(duplicate.slice(0, MAX_KEY_IN_REASON))} more than once` });
  }
  return parsed;
}

/** Replaces every body parser of the given (encapsulated) instance with the JSON one. */
export function acceptJsonBodiesOnly(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
