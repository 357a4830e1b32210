// The PEM files of TLS to upstreams (`proxy.upstreamTls`, each route's
// `tls`): resolved against the config file's folder, then judged before
// anything binds, at start as at each reload, by the one TLS material reader
// (files/tls-material.ts) that the proxy reads them with: every file
// readable, every certificate parseable, every key a private key and the one
// of its certificate, OpenSSL accepting the set. Never quotes a key.
import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../config/schema.js';
import { certificatesIn, checkKeyOf, checkOpenSslAccepts, privateKeyIn, readCertificates, readPemFile, TlsMaterialError } from '../files/tls-material.js';

interface TlsFiles {
  caFile?: string | undefined;
  certFile?: string | undefined;
  keyFile?: string | undefined;
}

/** Every TLS settings object with files, and its field path. */
function settingsOf(config: Config): Array<[string, TlsFiles]> {
  const all: Array<[string, TlsFiles]> = [['proxy.upstreamTls', config.proxy.upstreamTls]];
  config.routes.forEach((route, index) => {
    if (route.tls !== undefined) all.push([`routes[${index}].tls`, route.tls]);
  });
  return all;
}

/** Makes relative file paths absolute, from the config file's folder (before the config is frozen). */
export function resolveUpstreamTlsFiles(config: Config, baseDir: string): void {
  for (const [, files] of settingsOf(config)) {
    for (const field of ['caFile', 'certFile', 'keyFile'] as const) {
      const path = files[field];
      if (path !== undefined && !isAbsolute(path)) files[field] = resolve(baseDir, path);
    }
  }
}

/** Every problem with the files, each starting with its field's path; empty when all is well. */
export function upstreamTlsProblems(config: Config): string[] {
  const problems: string[] = [];
  for (const [at, files] of settingsOf(config)) {
    // Each file judged on its own, so that every one at fault is named, not only the first.
    const judged = <T>(judge: () => T): T | undefined => {
      try {
        return judge();
      } catch (error) {
        if (!(error instanceof TlsMaterialError)) throw error;
        problems.push(`${at}.${error.file}: ${error.message}`);
        return undefined;
      }
    };
    const { caFile, certFile, keyFile } = files;
    const ca = caFile === undefined ? undefined : judged(() => readCertificates(caFile, 'caFile'));
    if (caFile !== undefined && ca !== undefined) judged(() => checkOpenSslAccepts({ ca }, { caFile }));
    if (certFile === undefined || keyFile === undefined) continue;
    const cert = judged(() => readPemFile(certFile, 'certFile'));
    const leaf = cert === undefined ? undefined : judged(() => certificatesIn(cert, certFile, 'certFile')[0]);
    const key = judged(() => readPemFile(keyFile, 'keyFile'));
    const privateKey = key === undefined ? undefined : judged(() => privateKeyIn(key, keyFile));
    if (leaf === undefined || privateKey === undefined) continue;
    const paired = judged(() => (checkKeyOf(leaf, privateKey, { certFile, keyFile }), true));
    if (paired === true) judged(() => checkOpenSslAccepts({ cert, key, ca }, { certFile, keyFile, caFile }));
  }
  return problems;
}
