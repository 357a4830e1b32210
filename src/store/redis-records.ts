// How sessions and request records are kept in Redis: one hash per record,
// one field per property. Strings are stored as they are; numbers as
// `String(n)`, the shortest decimal that `Number()` reads back bit for bit,
// so epoch milliseconds of any size round-trip exactly; an absent optional
// property is an absent field. The key names the record, so its id is not
// repeated inside.
//
// Reading is strict: a hash this code did not write (a field missing, a
// number that is not one, a status or method it does not know) decodes to
// undefined, never to a half-filled record.
import type { AuthMethod } from '../core/vocabulary.js';
import type { RequestRecord, RequestStatus, SessionRecord } from './store.js';

/** A hash as HGETALL answers it. */
export type Hash = Record<string, string>;

const AUTH_METHODS: ReadonlySet<string> = new Set<AuthMethod>(['pwd', 'api_key']);
const REQUEST_STATUSES: ReadonlySet<string> = new Set<RequestStatus>(['pending', 'completed', 'failed']);

/**
 * `String(n)` of any finite number: the decimal forms a hash field may hold.
 * The transition script checks the same (isDecimal), and a hash's other
 * fields as requestFromHash does, so that it never changes a record that
 * reads as absent.
 */
const DECIMAL = /^-?\d+(\.\d+)?(e[+-]\d+)?$/;

/** HSET's field, value, field, value… for a session (its sid is the key's). */
export function sessionFields(session: SessionRecord): string[] {
  return [
    'sub',
    session.sub,
    'username',
    session.username,
    'method',
    session.method,
    ...(session.apiKeyId === undefined ? [] : ['apiKeyId', session.apiKeyId]),
    'createdAt',
    decimal(session.createdAt, 'createdAt'),
    'expiresAt',
    decimal(session.expiresAt, 'expiresAt'),
  ];
}

export function sessionFromHash(sid: string, hash: Hash): SessionRecord | undefined {
  const { sub, username, method, apiKeyId } = hash;
  const createdAt = numberOf(hash.createdAt);
  const expiresAt = numberOf(hash.expiresAt);
  if (sub === undefined || username === undefined || method === undefined || !AUTH_METHODS.has(method)) return undefined;
  if (createdAt === undefined || expiresAt === undefined) return undefined;
  return {
    sid,
    sub,
    username,
    method: method as AuthMethod,
    ...(apiKeyId === undefined ? {} : { apiKeyId }),
    createdAt,
    expiresAt,
  };
}

/** HSET's field, value, field, value… for a request record (its id is the key's). */
export function requestFields(record: RequestRecord): string[] {
  return [
    'status',
    record.status,
    'sub',
    record.sub,
    'route',
    record.route,
    'upstream',
    record.upstream,
    ...(record.statusUrl === undefined ? [] : ['statusUrl', record.statusUrl]),
    'createdAt',
    decimal(record.createdAt, 'createdAt'),
    'updatedAt',
    decimal(record.updatedAt, 'updatedAt'),
  ];
}

export function requestFromHash(id: string, hash: Hash): RequestRecord | undefined {
  const { status, sub, route, upstream, statusUrl } = hash;
  const createdAt = numberOf(hash.createdAt);
  const updatedAt = numberOf(hash.updatedAt);
  if (status === undefined || !REQUEST_STATUSES.has(status)) return undefined;
  if (sub === undefined || route === undefined || upstream === undefined) return undefined;
  if (createdAt === undefined || updatedAt === undefined) return undefined;
  return {
    id,
    status: status as RequestStatus,
    sub,
    route,
    upstream,
    ...(statusUrl === undefined ? {} : { statusUrl }),
    createdAt,
    updatedAt,
  };
}

/**
 * A number as a field value. A number Redis cannot hold as text that reads
 * back the same (NaN, ±Infinity) is a bug in the caller, not a store failure.
 */
export function decimal(value: number, name: string): string {
  if (!Number.isFinite(value)) throw new RangeError(`${name} must be a finite number, not ${value}`);
  return String(value);
}

function numberOf(text: string | undefined): number | undefined {
  return text !== undefined && DECIMAL.test(text) ? Number(text) : undefined;
}

/**
 * PX takes a positive whole number of milliseconds. Anything else is a bug in
 * the caller (the configured retention is a positive number of seconds), not
 * a Redis failure, so it is not reported as one.
 */
export function retentionPx(retentionMs: number): number {
  if (!Number.isFinite(retentionMs) || retentionMs <= 0) {
    throw new RangeError(`retentionMs must be a positive number of milliseconds, not ${retentionMs}`);
  }
  return Math.ceil(retentionMs);
}
