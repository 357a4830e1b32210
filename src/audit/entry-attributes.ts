// An entry as flat attributes (`audit.kind`, `audit.actor.id`, `audit.details.<name>`, …) for an exporter that
// takes key and value pairs, such as an OTLP log record. Every field of the entry, its chain links included, so a
// SIEM can check the chain from the export alone; nothing else, so nothing the trail keeps out gets in.
import type { AuditDetail, AuditEntry } from './entry.js';

export function auditAttributes(entry: AuditEntry): Record<string, AuditDetail> {
  const attributes: Record<string, AuditDetail> = {
    'audit.kind': entry.kind,
    'audit.at': entry.at,
    'audit.actor.kind': entry.actor.kind,
    'audit.actor.id': entry.actor.id,
    'audit.subject': entry.subject,
    'audit.outcome': entry.outcome,
    'audit.seq': entry.seq,
    'audit.prev': entry.prev,
    'audit.hash': entry.hash,
  };
  if (entry.from !== undefined) attributes['audit.from'] = entry.from;
  for (const [name, value] of Object.entries(entry.details ?? {})) attributes[`audit.details.${name}`] = value;
  return attributes;
}
