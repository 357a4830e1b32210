// `gatehouse audit …`: checks the trail's hash chain (and its checkpoints against a JWKS), lists its entries, and
// cuts the oldest on demand (retention, the cut recorded as the gateway's timer records it).
import { parseArgs } from 'node:util';
import { createRemoteJWKSet } from 'jose';
import { pino } from 'pino';
import { AuditAppender } from '../audit/appender.js';
import { auditRecordsOf } from '../audit/open-trail.js';
import { listEntries, parseTime, type AuditFilter } from '../audit/query.js';
import { operatorActor } from '../audit/recorder.js';
import { applyRetention, type RetentionPolicy } from '../audit/retention.js';
import { AuditSpool } from '../audit/spool.js';
import { verifyChain } from '../audit/verify-chain.js';
import type { AuditConfig, StoreConfig } from '../config/schema.js';
import type { AuditTrailRecords } from '../store/audit-records.js';
import { EXIT_FAILURE, EXIT_OK, formatTable, UsageError, writeLine, type CommandGroup, type OutputIo } from './command.js';
import { printable, writeJson } from './io.js';
import { withStore } from './store-session.js';

export interface AuditCommandIo extends OutputIo {
  audit: AuditConfig;
  store: StoreConfig;
}

export const AUDIT_COMMANDS: CommandGroup<AuditCommandIo> = {
  name: 'audit',
  subcommands: {
    verify: {
      synopsis: 'verify [--jwks URL] [--json]',
      summary: 'walk the audit chain; name the first entry altered, removed or inserted (exit 1)',
      details: `  --jwks URL also checks each signed checkpoint against the gateway's published
  keys (its /.well-known/jwks.json); without it checkpoints are counted, unchecked.`,
      run: verify,
    },
    list: {
      synopsis: 'list [--since TIME] [--until TIME] [--actor WHO] [--subject WHAT] [--kind KIND] [--limit N] [--json]',
      summary: 'list audit entries, oldest first (TIME: ISO 8601 or epoch ms; KIND: user.disabled, or user for all of them)',
      run: list,
    },
    prune: {
      synopsis: 'prune [--max-age-days N] [--max-entries N]',
      summary: 'cut the oldest audit entries now, by audit.retention or the limits given; the cut is itself an entry',
      run: prune,
    },
  },
};

async function withTrail<T>(io: AuditCommandIo, use: (records: AuditTrailRecords) => Promise<T>): Promise<T> {
  if (!io.store.url) return use(auditRecordsOf(io.audit, {}));
  return withStore(io.store, 'the audit trail lives there', (store) => use(auditRecordsOf(io.audit, store)));
}

async function verify(args: string[], io: AuditCommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { jwks: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: false, strict: true });
  const keys = values.jwks === undefined ? undefined : createRemoteJWKSet(new URL(values.jwks));
  const report = await withTrail(io, async (records) => verifyChain(await records.all(), keys));
  if (values.json) writeJson(io, report);
  else if (report.problem) writeLine(io.stdout, `TAMPERED (${report.problem.kind}) at ${report.problem.id}: ${report.problem.message}`);
  else {
    const { verified, unchecked } = report.checkpoints;
    const held = `${report.entries} entries (seq ${report.first ?? '-'} to ${report.last ?? '-'})`;
    writeLine(io.stdout, `ok: ${held} chain intact; checkpoints ${verified} verified, ${unchecked} unchecked`);
  }
  return report.problem ? EXIT_FAILURE : EXIT_OK;
}

async function list(args: string[], io: AuditCommandIo): Promise<number> {
  const text = { type: 'string' } as const;
  const { values } = parseArgs({
    args,
    options: { since: text, until: text, actor: text, subject: text, kind: text, limit: text, json: { type: 'boolean' } },
    allowPositionals: false,
    strict: true,
  });
  const filter: AuditFilter = {
    ...(values.actor && { actor: values.actor }),
    ...(values.subject && { subject: values.subject }),
    ...(values.kind && { kind: values.kind }),
  };
  for (const name of ['since', 'until'] as const) {
    if (values[name] === undefined) continue;
    const at = parseTime(values[name]);
    if (at === undefined) throw new UsageError(`--${name}: not a time (ISO 8601 or epoch ms): ${values[name]}`);
    filter[name] = at;
  }
  if (values.limit !== undefined) {
    if (!/^[1-9]\d{0,6}$/.test(values.limit)) throw new UsageError(`--limit: a whole number from 1: ${values.limit}`);
    filter.limit = Number(values.limit);
  }
  const entries = await withTrail(io, (records) => listEntries(records, filter));
  if (values.json) {
    writeJson(io, entries);
    return EXIT_OK;
  }
  const rows = entries.map((e) => [String(e.seq), e.at, e.kind, printable(`${e.actor.kind}:${e.actor.id}`), printable(e.subject), e.outcome]);
  writeLine(io.stdout, formatTable([['SEQ', 'AT', 'KIND', 'ACTOR', 'SUBJECT', 'OUTCOME'], ...rows]));
  return EXIT_OK;
}

/** A whole number of at least `min` for `--name`, or a UsageError. */
function wholeNumber(name: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d{1,9}$/.test(text) || Number(text) < min) throw new UsageError(`--${name}: a whole number from ${min}: ${text}`);
  return Number(text);
}

async function prune(args: string[], io: AuditCommandIo): Promise<number> {
  const text = { type: 'string' } as const;
  const { values } = parseArgs({ args, options: { 'max-age-days': text, 'max-entries': text }, allowPositionals: false, strict: true });
  const maxAgeDays = wholeNumber('max-age-days', values['max-age-days'], 1);
  const maxEntries = wholeNumber('max-entries', values['max-entries'], 2);
  const policy: RetentionPolicy = maxAgeDays !== undefined || maxEntries !== undefined ? { maxAgeDays, maxEntries } : io.audit.retention;
  if (policy.maxAgeDays === undefined && policy.maxEntries === undefined) {
    throw new UsageError('nothing to cut by: set audit.retention.maxAgeDays or maxEntries, or pass --max-age-days or --max-entries');
  }
  const removed = await withTrail(io, (records) => {
    const appender = new AuditAppender({ records, logger: pino({ enabled: false }), spool: new AuditSpool(undefined) });
    return applyRetention(records, appender, policy, Date.now(), operatorActor());
  });
  writeLine(
    io.stdout,
    removed === 0
      ? 'nothing to cut: every entry is within the retention'
      : `cut ${removed} entr${removed === 1 ? 'y' : 'ies'}; the cut is recorded in the trail`,
  );
  return EXIT_OK;
}
