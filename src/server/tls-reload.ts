// The listener's certificate follows its files without a restart: a renewal
// (cert-manager, certbot) rewrites them, the watch notices, and the new pair
// serves new connections once it is whole, its key matching its certificate.
// A pair caught half-way (the certificate written, the key not yet; a file
// cut short) is logged and ignored: the old certificate keeps serving until
// the next change completes it. Connections already open keep theirs.
import type { Logger } from 'pino';
import type { Server as TlsServer } from 'node:tls';
import { watchFile, type FileWatch } from '../files/watch-file.js';
import { readTlsMaterial, type TlsFiles, type TlsMaterial } from '../files/tls-material.js';

export interface TlsReload {
  /** The pair serving new connections now. */
  readonly current: TlsMaterial;
  close(): Promise<void>;
}

/**
 * Watches the files of `files` and puts each new whole pair in force with
 * `server.setSecureContext(contextOf(material))`.
 */
export function reloadTlsOnChange(
  server: TlsServer,
  files: TlsFiles,
  first: TlsMaterial,
  contextOf: (material: TlsMaterial) => object,
  intervalMs: number,
  logger: Logger,
): TlsReload {
  let current = first;
  const reload = (): void => {
    let next: TlsMaterial;
    try {
      next = readTlsMaterial(files);
    } catch (error) {
      // Never the key's content: the message names files and what is wrong with them.
      logger.warn(
        { event: 'tls_reload_refused', reason: (error as Error).message },
        'TLS files changed but are not a whole pair: the current certificate keeps serving',
      );
      return;
    }
    if (next.fingerprint256 === current.fingerprint256 && next.key.equals(current.key) && sameCa(next, current)) return;
    try {
      server.setSecureContext(contextOf(next));
    } catch (error) {
      logger.warn({ event: 'tls_reload_refused', reason: (error as Error).message }, 'the new TLS pair was refused: the current certificate keeps serving');
      return;
    }
    current = next;
    logger.info(
      { event: 'tls_reloaded', serialNumber: next.serialNumber, fingerprint256: next.fingerprint256, validTo: next.validTo },
      'TLS certificate reloaded',
    );
  };
  const paths = [files.certFile, files.keyFile, ...(files.caFile === undefined ? [] : [files.caFile])];
  const watches: FileWatch[] = paths.map((path) => watchFile(path, reload, intervalMs));
  return {
    get current() {
      return current;
    },
    async close() {
      await Promise.all(watches.map((watch) => watch.close()));
    },
  };
}

function sameCa(a: TlsMaterial, b: TlsMaterial): boolean {
  return a.ca === undefined ? b.ca === undefined : b.ca !== undefined && a.ca.equals(b.ca);
}
