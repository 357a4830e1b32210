// A backend that refuses the gateway under TLS 1.3 (no client certificate, or
// one it does not trust) does so after the handshake: it sends an alert and
// closes. The socket reports the alert (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED…),
// but undici answers the request with its own "other side closed", and the
// reason is lost. Here the connections to https:// targets are made by
// undici's own connector, watched: the TLS error of a socket is kept, by its
// local address, for a few seconds, and put back as the cause of the error
// undici reported for a request on it.
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import { errorCode, tlsFailureCode } from '../upstream-errors.js';

/** Long enough for the request's failure to be mapped after its socket closed; alerts are rare. */
const KEEP_MS = 5_000;

export class TlsAlerts {
  readonly #byLocalAddress = new Map<string, string>();

  /** undici's connector for `options`, its sockets watched. */
  connector(options: buildConnector.BuildOptions): buildConnector.connector {
    const connect = buildConnector(options);
    return (connectOptions, callback) =>
      connect(connectOptions, (...args) => {
        // On failure undici's connector calls back with the error alone.
        const socket = args[1] as Socket | null | undefined;
        if (args[0] === null && socket) this.#watch(socket);
        callback(...args);
      });
  }

  /** `error` with the TLS alert its socket received as its cause, when undici reported only the close. */
  explain(error: unknown): unknown {
    if (this.#byLocalAddress.size === 0 || errorCode(error) !== 'UND_ERR_SOCKET' || tlsFailureCode(error) !== undefined) return error;
    const info = (error as { socket?: { localAddress?: string; localPort?: number } }).socket;
    const code = info === undefined ? undefined : this.#byLocalAddress.get(`${info.localAddress} ${info.localPort}`);
    if (code === undefined) return error;
    return Object.assign(new Error(`the upstream ended the TLS connection: ${code}`, { cause: error }), { code });
  }

  #watch(socket: Socket): void {
    socket.prependListener('error', (error: Error) => {
      const code = tlsFailureCode(error);
      if (code === undefined) return;
      const key = `${socket.localAddress} ${socket.localPort}`;
      this.#byLocalAddress.set(key, code);
      setTimeout(() => this.#byLocalAddress.delete(key), KEEP_MS).unref();
    });
  }
}
