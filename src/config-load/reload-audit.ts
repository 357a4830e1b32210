// A config reload, as an audit event: which live sections it changed and a digest of each as it is now (never the
// sections themselves: a route's settings can hold an upstream's credentials).
import { shortDigest } from '../audit/entry.js';
import { gatewayActor, type AuditRecorder } from '../audit/recorder.js';
import type { Config } from '../config/schema.js';

const liveParts = (c: Config): Record<string, unknown> => ({
  routes: c.routes,
  authorization: c.authorization,
  cors: c.cors ?? null,
  'proxy.targetDownMs': c.proxy.targetDownMs,
});

/** Returns what to call with each config put in force: it records the sections that differ from the last one. */
export function reloadRecorder(recorder: AuditRecorder, file: string, running: Config): (next: Config) => void {
  let digests = Object.fromEntries(Object.entries(liveParts(running)).map(([name, part]) => [name, shortDigest(part)]));
  return (next) => {
    const now = Object.fromEntries(Object.entries(liveParts(next)).map(([name, part]) => [name, shortDigest(part)]));
    const changed = Object.keys(now).filter((name) => now[name] !== digests[name]);
    digests = now;
    const details = Object.fromEntries(changed.map((name) => [`digest:${name}`, now[name]!]));
    recorder.record({
      kind: 'config.reloaded',
      actor: gatewayActor(),
      subject: file,
      outcome: 'ok',
      details: { sections: changed, routes: next.routes.length, ...details },
    });
  };
}
