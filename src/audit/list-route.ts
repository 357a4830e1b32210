// GET /internal/v1/audit on the admin listener: the entries `gatehouse audit list` shows, as JSON, for tools
// (a SIEM's collector, a dashboard). Query: since, until (ISO 8601 or epoch ms), actor, subject, kind, limit.
import type { FastifyInstance } from 'fastify';
import { GatehouseError } from '../core/errors.js';
import type { AuditTrailRecords } from '../store/audit-records.js';
import { AUDIT_LIST_PATH } from '../http/gateway-paths.js';
import { listEntries, parseTime, type AuditFilter } from './query.js';

type Query = Partial<Record<'since' | 'until' | 'actor' | 'subject' | 'kind' | 'limit', string>>;

export function auditListRoute(records: AuditTrailRecords) {
  return async function auditRoutes(app: FastifyInstance): Promise<void> {
    app.get<{ Querystring: Query }>(AUDIT_LIST_PATH, async (request) => {
      const { since, until, actor, subject, kind, limit } = request.query;
      const filter: AuditFilter = { ...(actor && { actor }), ...(subject && { subject }), ...(kind && { kind }) };
      for (const [name, text] of [
        ['since', since],
        ['until', until],
      ] as const) {
        if (text === undefined) continue;
        const at = parseTime(text);
        if (at === undefined) throw new GatehouseError('invalid_request', { reason: `${name}: not a time (ISO 8601 or epoch ms)` });
        filter[name] = at;
      }
      if (limit !== undefined) {
        if (!/^[1-9]\d{0,6}$/.test(limit)) throw new GatehouseError('invalid_request', { reason: 'limit: a whole number from 1' });
        filter.limit = Number(limit);
      }
      return { entries: await listEntries(records, filter) };
    });
  };
}
