// Self-signed certificate and key pairs for the public listener's tests, made
// with openssl in a folder the test removes; each pair gets a serial number of
// the test's choosing, so a client can tell which pair a connection was served
// with. No key is ever committed.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TlsPair {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
  /** Upper-case hex, as X509Certificate and getPeerCertificate give it (choose serials from 0x1000: no leading zero). */
  serialNumber: string;
}

/** A self-signed EC P-256 pair for `localhost` and 127.0.0.1, written as `<name>.crt` and `<name>.key` in `dir`. */
export function makeTlsPair(dir: string, name: string, serialNumber: number, options: { clientAuth?: boolean } = {}): TlsPair {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const serial = `0x${serialNumber.toString(16)}`;
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-set_serial',
      serial,
      '-subj',
      `/CN=${name}`,
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      ...(options.clientAuth ? ['-addext', 'extendedKeyUsage=clientAuth'] : []),
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return {
    certFile,
    keyFile,
    cert: readFileSync(certFile),
    key: readFileSync(keyFile),
    serialNumber: serialNumber.toString(16).toUpperCase(),
  };
}
