// The verified client certificate of a TLS connection (server.tls.clientCertificates),
// named to backends: its subject, in one header the gateway alone sets. Read
// only from a connection whose certificate the configured CAs verified
// (`authorized`); a plain connection costs one property read. Read once per
// socket: an h2 connection's streams each have their own (server/http2-request.ts).
import type { X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** Set by the gateway alone: a client's copy, however spelt, is removed like every `x-gatehouse-*` it does not own. */
export const CLIENT_SUBJECT_HEADER = 'x-gatehouse-client-subject';

interface CertifiedSocket {
  encrypted?: boolean;
  authorized?: boolean;
  getPeerX509Certificate?(): X509Certificate | undefined;
}

const subjects = new WeakMap<object, string | null>();

/**
 * The subject's attributes as the certificate lists them, joined by commas
 * (`C=DE,O=Example,CN=alice`; a comma or backslash inside a value escaped with
 * a backslash, as RFC 4514 does); undefined without a verified certificate.
 */
export function verifiedClientSubject(req: IncomingMessage): string | undefined {
  const socket = req.socket as (IncomingMessage['socket'] & CertifiedSocket) | null;
  if (socket === null || socket.encrypted !== true || socket.authorized !== true) return undefined;
  let subject = subjects.get(socket);
  if (subject === undefined) {
    const certificate = socket.getPeerX509Certificate?.();
    subject =
      certificate === undefined
        ? null
        : certificate.subject
            .split('\n')
            .map((attribute) => attribute.replace(/[\\,]/g, (c) => `\\${c}`))
            .join(',');
    subjects.set(socket, subject);
  }
  return subject ?? undefined;
}
