// `/metrics` with `server.workers` > 1. Each worker counts in its own
// registry, and a scrape reaches whichever worker node:cluster hands the
// connection to; alone, that worker's figures would jump between scrapes.
// So the worker asks the primary, which gathers every worker's registry with
// prom-client's AggregatorRegistry (counters and histograms summed, gauges
// by each metric's `aggregator`) and answers the scrape with the whole.
import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

const ASK = 'gatehouse:metrics-ask';
const ANSWER = 'gatehouse:metrics-answer';
/** Longer than prom-client's own 5 s wait for every worker. */
const SCRAPE_TIMEOUT_MS = 6_000;

interface Ask {
  type: typeof ASK;
  id: number;
}
interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/** In the primary: answers every worker's ask with the sum over all workers. */
export function serveClusterMetrics(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: Partial<Ask>) => {
    if (message?.type !== ASK || typeof message.id !== 'number') return;
    const id = message.id;
    aggregator.clusterMetrics().then(
      (text) => worker.send({ type: ANSWER, id, text } satisfies Answer),
      (error: unknown) => worker.send({ type: ANSWER, id, error: error instanceof Error ? error.message : String(error) } satisfies Answer),
    );
  });
}

/**
 * In a worker: hands `registry` to the primary's gatherings, and returns the
 * scrape that asks the primary for the whole.
 */
export function workerScrape(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  new AggregatorRegistry(); // answers the primary's gatherings from this worker's registry
  const waiting = new Map<number, (answer: Answer) => void>();
  let next = 0;
  process.on('message', (message: Partial<Answer>) => {
    if (message?.type === ANSWER && typeof message.id === 'number') waiting.get(message.id)?.(message as Answer);
  });
  return () =>
    new Promise<string>((resolve, reject) => {
      const id = next++;
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error("the primary did not answer with the workers' metrics"));
      }, SCRAPE_TIMEOUT_MS);
      waiting.set(id, (answer) => {
        clearTimeout(timer);
        waiting.delete(id);
        if (answer.text !== undefined) resolve(answer.text);
        else reject(new Error(answer.error ?? 'no metrics'));
      });
      process.send!({ type: ASK, id } satisfies Ask);
    });
}
