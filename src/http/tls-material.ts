// The public listener's certificate, key and client CAs, read from their PEM
// files and judged whole before anything uses them: the config check at start
// (config-load/environment.ts) and every reload of a renewed pair
// (server/tls-reload.ts) call this same function, so what passes the check is
// what the listener can serve. A pair is whole when the key parses, the chain
// parses, and the key is the first certificate's; a file caught half-written
// fails one of those.
import { createPrivateKey, X509Certificate } from 'node:crypto';
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

/** Reads and judges the files; throws TlsMaterialError naming the file at fault. Never quotes a key. */
export function readTlsMaterial(files: TlsFiles): TlsMaterial {
  const cert = readPem(files.certFile, 'certFile');
  const key = readPem(files.keyFile, 'keyFile');
  const chain = certificatesIn(cert, files.certFile, 'certFile');
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch {
    throw new TlsMaterialError('keyFile', `${files.keyFile} is not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)`);
  }
  const leaf = chain[0]!;
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsMaterialError(
      'keyFile',
      `${files.keyFile} is not the private key of the first certificate in ${files.certFile} (${leaf.subject.replace(/\n/g, ', ')})`,
    );
  }
  let ca: Buffer | undefined;
  if (files.caFile !== undefined) {
    ca = readPem(files.caFile, 'caFile');
    certificatesIn(ca, files.caFile, 'caFile');
  }
  try {
    // What OpenSSL itself refuses (a key type or size it will not use) is found now, not at the first handshake.
    createSecureContext({ cert, key, ca });
  } catch (error) {
    throw new TlsMaterialError('certFile', `${files.certFile} and ${files.keyFile} are refused by OpenSSL (${(error as Error).message})`);
  }
  return { cert, key, ca, serialNumber: leaf.serialNumber, fingerprint256: leaf.fingerprint256, validTo: leaf.validTo };
}

function readPem(path: string, field: keyof TlsFiles): Buffer {
  try {
    return readFileSync(path);
  } catch (error) {
    throw new TlsMaterialError(field, `cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function certificatesIn(pem: Buffer, path: string, field: keyof TlsFiles): X509Certificate[] {
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
