// The soak's traffic: a mix of what clients and backends do to Gatehouse —
// logins, refreshes, proxied calls, 202s, polls, long polls and status
// reports — each answer checked, and a ledger of every accepted requestId
// with the status it must have, verified at the end.
import { Agent } from 'node:http';
import { BENCH_PASSWORD, BENCH_USER } from './gatehouse.js';
import { call, type CallAnswer, type CallOptions } from './http-call.js';

export type Kind = 'proxied' | 'accept' | 'poll' | 'longPoll' | 'report' | 'refresh' | 'login';

/** Shares of the mix, in percent. Logins are few: a password login is a full-strength scrypt. */
const MIX: ReadonlyArray<[Kind, number]> = [
  ['proxied', 47],
  ['accept', 10],
  ['poll', 22],
  ['longPoll', 4],
  // Fewer first reports (with the long polls' ones) than 202s: some requests stay pending to the end.
  ['report', 9],
  ['refresh', 6],
  ['login', 2],
];

const SESSIONS = 16;
const TIMEOUT_MS = 10_000;
const LONG_POLL_WAIT_S = 2;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

type Status = 'pending' | 'completed' | 'failed';
type Terminal = Exclude<Status, 'pending'>;

interface Entry {
  expected: Status;
  /** A report is on its way: until it answers, either status is right. */
  reporting?: Terminal;
}

interface Session {
  access: string;
  refresh: string;
}

export interface SoakTarget {
  url: string;
  adminUrl: string;
  apiKey: string;
  serviceToken: string;
}

export interface Verification {
  checked: number;
  /** Unknown (404) at the end though accepted with a 202. */
  lost: string[];
  /** Known, but not in the status last reported. */
  wrong: Array<{ id: string; expected: Status; got: string }>;
  byStatus: Record<Status, number>;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;
const otherTerminal = (status: Terminal): Terminal => (status === 'completed' ? 'failed' : 'completed');

export class SoakTraffic {
  readonly #target: SoakTarget;
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 64 });
  readonly #sessions: Session[] = [];
  readonly #records = new Map<string, Entry>();
  readonly #ids: string[] = [];
  /** Pending and not being reported: what reports and long polls pick from. */
  readonly #pending: string[] = [];
  readonly #terminal: string[] = [];
  readonly done = new Map<Kind, number>();
  readonly latencies = new Map<Kind, number[]>();
  errors = 0;
  readonly errorSamples: string[] = [];

  constructor(target: SoakTarget) {
    this.#target = target;
  }

  async start(): Promise<void> {
    for (let i = 0; i < SESSIONS; i++) this.#sessions.push(await this.#login(i % 4 === 0));
  }

  get accepted(): number {
    return this.#ids.length;
  }

  get reported(): number {
    return this.#terminal.length;
  }

  /** One operation, chosen by the mix; never throws (a failure is counted). */
  async one(): Promise<void> {
    let roll = Math.random() * 100;
    let kind = MIX.find(([, share]) => (roll -= share) < 0)?.[0] ?? 'proxied';
    // Nothing to poll or report yet: make something to poll or report.
    if ((kind === 'poll' && this.#ids.length === 0) || ((kind === 'longPoll' || kind === 'report') && this.#pending.length === 0)) kind = 'accept';
    try {
      await this.#run(kind);
      this.done.set(kind, (this.done.get(kind) ?? 0) + 1);
    } catch (error) {
      this.#fail(`${kind}: ${(error as Error).message}`);
    }
  }

  close(): void {
    this.#agent.destroy();
  }

  async #run(kind: Kind): Promise<void> {
    const session = pick(this.#sessions);
    switch (kind) {
      case 'proxied': {
        await this.#call(kind, `${this.#target.url}/items/${Math.floor(Math.random() * 1000)}`, { headers: this.#bearer(session) }, 200);
        return;
      }
      case 'accept': {
        const answer = await this.#call(kind, `${this.#target.url}/jobs`, { method: 'POST', headers: this.#bearer(session) }, 202);
        const id = (JSON.parse(answer.body) as { requestId?: string }).requestId;
        if (typeof id !== 'string' || !UUID.test(id)) throw new Error(`202 without a requestId: ${answer.body}`);
        if (!String(answer.headers.location ?? '').endsWith(`/requests/${id}/status`)) throw new Error(`202 without its Location: ${answer.headers.location}`);
        this.#records.set(id, { expected: 'pending' });
        this.#ids.push(id);
        this.#pending.push(id);
        return;
      }
      case 'poll':
        await this.#poll(kind, pick(this.#ids), session, 0);
        return;
      case 'longPoll':
        await this.#longPoll(pick(this.#pending), session);
        return;
      case 'report':
        // One report in five repeats one on a finished request: the same status or the other.
        if (Math.random() < 0.2 && this.#terminal.length > 0) await this.#repeatReport(pick(this.#terminal));
        else await this.#report(this.#takePending());
        return;
      case 'refresh': {
        const answer = await this.#call(
          kind,
          `${this.#target.url}/api/v1/auth/refresh`,
          { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ refresh_token: session.refresh }) },
          200,
        );
        session.access = (JSON.parse(answer.body) as { access_token: string }).access_token;
        return;
      }
      case 'login':
        this.#sessions[Math.floor(Math.random() * this.#sessions.length)] = await this.#login(Math.random() < 0.1);
        return;
    }
  }

  async #login(withPassword: boolean): Promise<Session> {
    const password = withPassword ? BENCH_PASSWORD : this.#target.apiKey;
    const answer = await this.#call(
      'login',
      `${this.#target.url}/api/v1/auth/login`,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: BENCH_USER, password }) },
      200,
    );
    const tokens = JSON.parse(answer.body) as { access_token: string; refresh_token: string };
    return { access: tokens.access_token, refresh: tokens.refresh_token };
  }

  /** The status a poll answered; it must be one the record had at some moment between the send and the answer. */
  async #poll(kind: Kind, id: string, session: Session, waitS: number): Promise<string> {
    const entry = this.#records.get(id)!;
    const allowed = new Set<string>([entry.expected, ...(entry.reporting ? [entry.reporting] : [])]);
    const path = `${Math.random() < 0.5 ? '/api' : ''}/v1/requests/${id}/status${waitS > 0 ? `?wait=${waitS}` : ''}`;
    const answer = await this.#call(kind, `${this.#target.url}${path}`, { method: Math.random() < 0.5 ? 'GET' : 'POST', headers: this.#bearer(session) }, 200);
    const { status } = JSON.parse(answer.body) as { status: string };
    allowed.add(entry.expected);
    if (entry.reporting) allowed.add(entry.reporting);
    if (!allowed.has(status)) throw new Error(`${id}: status ${status}, expected ${[...allowed].join(' or ')}`);
    return status;
  }

  /** A long poll, half of them with a report while they wait: then the answer must be the change, not the timeout. */
  async #longPoll(id: string, session: Session): Promise<void> {
    if (Math.random() < 0.5) {
      await this.#poll('longPoll', id, session, LONG_POLL_WAIT_S);
      return;
    }
    const polled = this.#poll('longPoll', id, session, LONG_POLL_WAIT_S);
    const reportStarted = performance.now();
    const [status, applied] = await Promise.all([polled, this.#report(id).then((made) => (made ? performance.now() - reportStarted : Infinity))]);
    // A report applied well inside the wait must end it; `pending` then means the change was missed.
    if (status === 'pending' && applied < LONG_POLL_WAIT_S * 1000 - 500)
      throw new Error(`${id}: a long poll answered pending though its report was applied after ${applied.toFixed(0)} ms`);
  }

  /** Reports a pending request's outcome; false when it was not pending (or someone else is reporting it). */
  async #report(id: string | undefined): Promise<boolean> {
    if (id === undefined) return false;
    const entry = this.#records.get(id)!;
    if (entry.expected !== 'pending' || entry.reporting) return false;
    const status: Terminal = Math.random() < 0.5 ? 'completed' : 'failed';
    entry.reporting = status;
    const index = this.#pending.indexOf(id);
    if (index >= 0) this.#pending.splice(index, 1);
    try {
      const answer = await this.#internal(id, status, 200);
      const { outcome } = JSON.parse(answer.body) as { outcome: string };
      if (outcome !== 'applied') throw new Error(`${id}: first report answered ${outcome}`);
      entry.expected = status;
      this.#terminal.push(id);
      return true;
    } finally {
      entry.reporting = undefined;
    }
  }

  async #repeatReport(id: string): Promise<void> {
    const { expected } = this.#records.get(id)!;
    if (expected === 'pending') return;
    if (Math.random() < 0.5) {
      const answer = await this.#internal(id, expected, 200);
      if ((JSON.parse(answer.body) as { outcome: string }).outcome !== 'already_applied') throw new Error(`${id}: a repeated report answered ${answer.body}`);
    } else {
      await this.#internal(id, otherTerminal(expected), 409);
    }
  }

  #internal(id: string, status: Terminal, expectedStatus: number): Promise<CallAnswer> {
    return this.#call(
      'report',
      `${this.#target.adminUrl}/internal/v1/requests/${id}/status`,
      {
        method: 'PUT',
        headers: { authorization: `Bearer ${this.#target.serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ status }),
      },
      expectedStatus,
    );
  }

  #takePending(): string | undefined {
    if (this.#pending.length === 0) return undefined;
    const index = Math.floor(Math.random() * this.#pending.length);
    const [id] = this.#pending.splice(index, 1);
    return id;
  }

  #bearer(session: Session): Record<string, string> {
    return { authorization: `Bearer ${session.access}` };
  }

  async #call(kind: Kind, url: string, options: Omit<CallOptions, 'timeoutMs'>, expectedStatus: number): Promise<CallAnswer> {
    const answer = await call(this.#agent, url, { ...options, timeoutMs: TIMEOUT_MS });
    if (answer.status !== expectedStatus) throw new Error(`${options.method ?? 'GET'} ${new URL(url).pathname}: ${answer.status} ${answer.body.slice(0, 200)}`);
    const list = this.latencies.get(kind) ?? [];
    list.push(answer.ms);
    this.latencies.set(kind, list);
    return answer;
  }

  #fail(message: string): void {
    this.errors++;
    if (this.errorSamples.length < 10) this.errorSamples.push(message);
  }

  /** Every requestId accepted during the run, asked for once more: known, and in the status last reported. */
  async verify(concurrency = 16): Promise<Verification> {
    const result: Verification = { checked: 0, lost: [], wrong: [], byStatus: { pending: 0, completed: 0, failed: 0 } };
    const queue = [...this.#ids];
    const session = this.#sessions[0]!;
    const worker = async () => {
      for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
        const entry = this.#records.get(id)!;
        const answer = await call(this.#agent, `${this.#target.url}/api/v1/requests/${id}/status`, { headers: this.#bearer(session), timeoutMs: TIMEOUT_MS });
        result.checked++;
        result.byStatus[entry.expected]++;
        if (answer.status === 404) result.lost.push(id);
        else if (answer.status !== 200) result.wrong.push({ id, expected: entry.expected, got: `HTTP ${answer.status}` });
        else if ((JSON.parse(answer.body) as { status: string }).status !== entry.expected)
          result.wrong.push({ id, expected: entry.expected, got: answer.body });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return result;
  }
}
