// The serving process's V8 settings (src/cli/heap-tuning.ts), held in a child process of their own: a program whose
// objects all stay alive makes V8 switch their allocation site to the old generation (pretenuring, which
// `--trace-pretenuring-statistics` reports), unless the tuning was applied first.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);

/** Keeps every object it makes: each scavenge finds all of them alive, the pattern pretenuring is made for. */
const KEEP_EVERYTHING = `
  const kept = [];
  const make = (i) => ({ a: i, b: [i] });
  for (let i = 0; i < 1_500_000; i++) kept.push(make(i));
`;

async function pretenuringDecisions(tuned: boolean): Promise<string[]> {
  const tune = tuned ? "(await import('./src/cli/heap-tuning.ts')).tuneHeapForServing();" : '';
  const args = ['--trace-pretenuring-statistics', '--import', 'tsx', '--input-type=module', '-e', `${tune}${KEEP_EVERYTHING}`];
  const { stdout } = await run(process.execPath, args, { maxBuffer: 1 << 24 });
  return stdout.split('\n').filter((line) => /pretenuring: AllocationSite.*=> (maybe )?tenure/.test(line));
}

describe('the serving process heap tuning', () => {
  it('turns allocation-site pretenuring off, which a program keeping its objects otherwise triggers', async () => {
    expect((await pretenuringDecisions(false)).length).toBeGreaterThan(0);
    expect(await pretenuringDecisions(true)).toEqual([]);
  }, 60_000);
});
