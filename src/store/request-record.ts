// The one check that a value read back from outside the process (a Redis
// reply, a journal line) has the shape of a RequestRecord.
import type { RequestRecord, RequestStatus } from './store.js';

const REQUEST_STATUSES: ReadonlySet<unknown> = new Set<RequestStatus>(['pending', 'completed', 'failed']);

export function isRequestRecord(value: unknown): value is RequestRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Partial<Record<keyof RequestRecord, unknown>>;
  return (
    typeof record.id === 'string' &&
    REQUEST_STATUSES.has(record.status) &&
    typeof record.sub === 'string' &&
    typeof record.route === 'string' &&
    typeof record.upstream === 'string' &&
    (record.statusUrl === undefined || typeof record.statusUrl === 'string') &&
    typeof record.createdAt === 'number' &&
    typeof record.updatedAt === 'number'
  );
}
