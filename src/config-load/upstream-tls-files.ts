// The PEM files of TLS to upstreams (`proxy.upstreamTls`, each route's
// `tls`): resolved against the config file's folder, then judged before
// anything binds, at start as at each reload: every file readable, every CA
// bundle and certificate parseable, every key a private key, and each client
// key the one of its certificate. Never quotes a key.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import type { Config } from '../config/schema.js';

type FileField = 'caFile' | 'certFile' | 'keyFile';

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
    const fault = (field: FileField, problem: string) => problems.push(`${at}.${field}: ${problem}`);
    const ca = files.caFile === undefined ? undefined : readPem(files.caFile, (p) => fault('caFile', p));
    if (ca !== undefined && certificates(ca).length === 0) fault('caFile', `${files.caFile} holds no valid PEM certificate`);
    if (files.certFile === undefined || files.keyFile === undefined) continue;
    const cert = readPem(files.certFile, (p) => fault('certFile', p));
    const key = readPem(files.keyFile, (p) => fault('keyFile', p));
    const leaf = cert === undefined ? undefined : certificates(cert)[0];
    if (cert !== undefined && leaf === undefined) fault('certFile', `${files.certFile} holds no valid PEM certificate`);
    const privateKey = key === undefined ? undefined : parseKey(key);
    if (key !== undefined && privateKey === undefined) fault('keyFile', `${files.keyFile} is not an unencrypted PEM private key`);
    if (leaf !== undefined && privateKey !== undefined && !leaf.checkPrivateKey(privateKey)) {
      fault('keyFile', `${files.keyFile} is not the private key of the certificate in ${files.certFile}`);
    }
  }
  return problems;
}

function readPem(file: string, fault: (problem: string) => void): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch (error) {
    fault(`cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return undefined;
  }
}

/** The certificates of a PEM bundle that parse, in order. */
function certificates(pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const parsed: X509Certificate[] = [];
  for (const block of blocks) {
    try {
      parsed.push(new X509Certificate(block));
    } catch {
      return [];
    }
  }
  return parsed;
}

function parseKey(pem: Buffer): KeyObject | undefined {
  try {
    return createPrivateKey(pem);
  } catch {
    return undefined;
  }
}
