// What refusing duplicate keys costs the gateway's JSON bodies: the parser
// as it was (secure-json-parse alone) against parseJsonBody (the same plus
// the duplicate-key scan), in process, on a login body and on a body of the
// size limit's order. Rounds interleave the two so a busy moment hits both.
//
//   npm run bench -- json
import sjson from 'secure-json-parse';
import { parseJsonBody } from '../src/http/json-body.js';
import { writeResults } from './lib/report.js';
import { median } from './lib/stats.js';

const ROUNDS = 7;

const BODIES: Record<string, string> = {
  login: JSON.stringify({ username: 'alice', password: 'correct horse battery staple' }),
  // ~9.5 KiB: nested objects and arrays, strings with escapes, below the default 16 KiB limit.
  nested: JSON.stringify({
    items: Array.from({ length: 120 }, (_, i) => ({ id: i, name: `item "${i}"\n`, tags: ['a', 'b'], meta: { owner: 'x', n: i * 1.5 } })),
  }),
};

function nsPerOp(parse: (text: string) => unknown, text: string, ops: number): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < ops; i++) parse(text);
  return Number(process.hrtime.bigint() - start) / ops;
}

export function benchJsonBody(): Array<{ body: string; bytes: number; parseNs: number; parseAndScanNs: number; ratio: number }> {
  const parseOnly = (text: string) => sjson.parse(text, { protoAction: 'error', constructorAction: 'error' });
  return Object.entries(BODIES).map(([body, text]) => {
    const ops = Math.max(2_000, Math.round(20_000_000 / text.length));
    nsPerOp(parseOnly, text, ops);
    nsPerOp(parseJsonBody, text, ops); // warm-up
    const before: number[] = [];
    const after: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      before.push(nsPerOp(parseOnly, text, ops));
      after.push(nsPerOp(parseJsonBody, text, ops));
    }
    const parseNs = median(before);
    const parseAndScanNs = median(after);
    return { body, bytes: text.length, parseNs, parseAndScanNs, ratio: parseAndScanNs / parseNs };
  });
}

export async function runJsonBodySection(): Promise<void> {
  const rows = benchJsonBody();
  const lines = rows.map(
    (r) =>
      `${r.body.padEnd(8)} ${String(r.bytes).padStart(6)} B  ` +
      `${r.parseNs.toFixed(0).padStart(8)} ns  ${r.parseAndScanNs.toFixed(0).padStart(8)} ns  ${r.ratio.toFixed(2)}×`,
  );
  process.stdout.write(`\nJSON bodies: secure-json-parse alone, then with the duplicate-key scan (median of ${ROUNDS})\n${lines.join('\n')}\n`);
  writeResults('json', rows);
}
