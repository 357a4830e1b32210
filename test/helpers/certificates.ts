// Certificates made for a test with openssl, in a temporary folder the test
// removes: a private CA, server certificates it signs (for names and addresses
// of our choosing, valid or already expired), and client certificates for
// mTLS. No key is ever committed.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
  cert: Buffer;
  key: Buffer;
}

export interface TestAuthority extends CertificateFiles {
  dir: string;
  /** A certificate for `names` (DNS names; IP addresses are recognised), signed by this CA. */
  issue(name: string, options?: IssueOptions): CertificateFiles;
  remove(): void;
}

export interface IssueOptions {
  /** Subject alternative names; default `localhost` and 127.0.0.1. */
  altNames?: string[];
  /** `client` for a client certificate (extendedKeyUsage clientAuth). */
  usage?: 'server' | 'client';
  /** Already expired: its validity ended yesterday. */
  expired?: boolean;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function files(dir: string, base: string): CertificateFiles {
  const certFile = join(dir, `${base}.crt`);
  const keyFile = join(dir, `${base}.key`);
  return { certFile, keyFile, cert: readFileSync(certFile), key: readFileSync(keyFile) };
}

/** A new CA (EC P-256) in a temporary folder. */
export function createTestAuthority(label = 'Gatehouse Test CA'): TestAuthority {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-certs-'));
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'ca.key'], dir);
  openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      'ca.key',
      '-sha256',
      '-days',
      '2',
      '-subj',
      `/CN=${label}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-out',
      'ca.crt',
    ],
    dir,
  );
  const ca = files(dir, 'ca');
  return {
    ...ca,
    dir,
    issue(name, options = {}) {
      const altNames = options.altNames ?? ['localhost', '127.0.0.1'];
      const san = altNames.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
      const usage = options.usage === 'client' ? 'clientAuth' : 'serverAuth';
      writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=${usage}\nbasicConstraints=CA:FALSE\n`);
      openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', `${name}.key.sec1`], dir);
      // PKCS#8, the form every consumer (and the config check) reads.
      openssl(['pkcs8', '-topk8', '-nocrypt', '-in', `${name}.key.sec1`, '-out', `${name}.key`], dir);
      openssl(['req', '-new', '-key', `${name}.key`, '-subj', `/CN=${name}`, '-out', `${name}.csr`], dir);
      // openssl 3.0's x509 has no -not_before: a negative lifetime ends a day before it starts, now.
      const validity = ['-days', options.expired ? '-1' : '1'];
      openssl(
        [
          'x509',
          '-req',
          '-in',
          `${name}.csr`,
          '-CA',
          'ca.crt',
          '-CAkey',
          'ca.key',
          '-CAcreateserial',
          '-sha256',
          '-extfile',
          `${name}.ext`,
          ...validity,
          '-out',
          `${name}.crt`,
        ],
        dir,
      );
      return files(dir, name);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
