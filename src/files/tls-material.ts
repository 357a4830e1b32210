// The one reader of TLS material from PEM files: the public listener's pair
// and client CAs, and the CA bundles and client pairs of TLS to upstreams.
// Files are judged whole before anything uses them: every certificate of a
// file parses, a key is an unencrypted private key, a key is its first
// certificate's, and OpenSSL itself accepts the set; a file caught
// half-written fails one of those. The config check (config-load/) and what
// serves the material (server/ at start and on renewal, proxy/ per load of the
// routes) call the same functions, so what passes the check is what is
// served. Errors name the file's field; a key is never quoted.
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext } from 'node:tls';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** Client certificates' CAs (mTLS); absent: none are asked for. */
  caFile?: string | undefined;
}

export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca: Buffer | undefined;
  /** The server certificate's, for the log: which pair is serving. */
  serialNumber: string;
  fingerprint256: string;
  validTo: string;
}

/** Which file a problem is in, so the config check can name the field. */
export class TlsMaterialError extends Error {
  constructor(
    readonly file: keyof TlsFiles,
    message: string,
  ) {
    super(message);
  }
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Reads and judges a certificate and its key (and client CAs); throws TlsMaterialError naming the file at fault. */
export function readTlsMaterial(files: TlsFiles): TlsMaterial {
  const cert = readPemFile(files.certFile, 'certFile');
  const key = readPemFile(files.keyFile, 'keyFile');
  const leaf = certificatesIn(cert, files.certFile, 'certFile')[0]!;
  checkKeyOf(leaf, privateKeyIn(key, files.keyFile), files);
  let ca: Buffer | undefined;
  if (files.caFile !== undefined) ca = readCertificates(files.caFile, 'caFile');
  checkOpenSslAccepts({ cert, key, ca }, files);
  return { cert, key, ca, serialNumber: leaf.serialNumber, fingerprint256: leaf.fingerprint256, validTo: leaf.validTo };
}

/** The bytes of a PEM file; TlsMaterialError for `field` when it cannot be read. */
export function readPemFile(path: string, field: keyof TlsFiles): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new TlsMaterialError(field, `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

/** A file of certificates (a CA bundle, a chain), each of them judged. */
export function readCertificates(path: string, field: keyof TlsFiles): Buffer {
  const pem = readPemFile(path, field);
  certificatesIn(pem, path, field);
  return pem;
}

/** The certificates of a PEM file, in order; at least one, and every one must parse. */
export function certificatesIn(pem: Buffer, path: string, field: keyof TlsFiles): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) throw new TlsMaterialError(field, `${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`);
  return blocks.map((block, index) => {
    try {
      return new X509Certificate(block);
    } catch {
      throw new TlsMaterialError(field, `${path}: certificate ${index + 1} is not a valid X.509 certificate`);
    }
  });
}

/** The private key of a PEM file (the `keyFile` field). */
export function privateKeyIn(pem: Buffer | string, path: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new TlsMaterialError('keyFile', `${path} is not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)`);
  }
}

/** That `key` is the private key of `leaf`, the first certificate of `files.certFile`. */
export function checkKeyOf(leaf: X509Certificate, key: KeyObject, files: Pick<TlsFiles, 'certFile' | 'keyFile'>): void {
  if (!leaf.checkPrivateKey(key)) {
    throw new TlsMaterialError(
      'keyFile',
      `${files.keyFile} is not the private key of the first certificate in ${files.certFile} (${leaf.subject.replace(/\n/g, ', ')})`,
    );
  }
}

/** What OpenSSL itself refuses (a key type or size it will not use) is found now, not at the first handshake. */
export function checkOpenSslAccepts(material: { cert?: Buffer; key?: Buffer; ca?: Buffer | undefined }, files: Partial<TlsFiles>): void {
  try {
    createSecureContext(material);
  } catch (error) {
    const field = material.cert !== undefined ? 'certFile' : 'caFile';
    const named = material.cert !== undefined ? `${files.certFile} and ${files.keyFile}` : `${files.caFile}`;
    throw new TlsMaterialError(field, `${named} ${material.cert !== undefined ? 'are' : 'is'} refused by OpenSSL (${(error as Error).message})`);
  }
}
