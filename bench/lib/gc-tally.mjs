// Loaded into a benchmarked process with `--import`: counts its garbage
// collections with V8's GC profiler and, as it exits, writes what its
// scavenges promoted to the old generation (GC_TALLY_FILE). Bytes promoted per
// request is the steadiest sign of objects kept alive too long: it does not
// move with the machine's load as GC time does.
import { writeFileSync } from 'node:fs';
import v8 from 'node:v8';

// SIGUSR2 starts the count (after start-up and warm-up, which promote what lives for good).
const file = process.env.GC_TALLY_FILE;
const profiler = new v8.GCProfiler();
let counting = false;
process.once('SIGUSR2', () => {
  profiler.start();
  counting = true;
});
process.once('exit', () => {
  if (!counting) return;
  const { statistics } = profiler.stop();
  const used = (phase, space) => phase.heapSpaceStatistics.find((s) => s.spaceName === space)?.spaceUsedSize ?? 0;
  const tally = { scavenges: 0, promotedBytes: 0, majors: 0, gcMicros: 0 };
  for (const gc of statistics) {
    tally.gcMicros += gc.cost;
    if (gc.gcType === 'Scavenge') {
      tally.scavenges += 1;
      tally.promotedBytes += Math.max(0, used(gc.afterGC, 'old_space') - used(gc.beforeGC, 'old_space'));
    } else tally.majors += 1;
  }
  if (file) writeFileSync(file, JSON.stringify(tally));
});
