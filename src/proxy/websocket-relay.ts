// Carries a tunnel's messages between its two WebSockets, the client's and
// the upstream's, as they were meant: text stays text and binary binary,
// pings and pongs go through (a client's ping is answered by the upstream,
// so it proves the upstream alive, not just the gateway), and a close on one
// side closes the other with the same code and reason. A side that sends
// faster than the other can take is paused until the other has drained.
import { WebSocket, type RawData } from 'ws';

/** Bytes queued towards one side above which the other is paused, and below which it resumes. */
const HIGH_WATER_BYTES = 1024 * 1024;
const LOW_WATER_BYTES = 256 * 1024;

/** RFC 6455 7.4.1: no status code was present; never sent on the wire. */
const NO_STATUS = 1005;
/** RFC 6455 7.4.1: the connection went without a close frame; never sent on the wire. */
const ABNORMAL = 1006;
/** RFC 6455 7.4.1: the endpoint is going away (the gateway stopping). */
const GOING_AWAY = 1001;
/** RFC 6455 7.4.1: a message violated policy; here, the session that carried the tunnel is over. */
const POLICY_VIOLATION = 1008;

const AS_TEXT = Object.freeze({ binary: false });
const AS_BINARY = Object.freeze({ binary: true });

export function relay(client: WebSocket, upstream: WebSocket): void {
  forward(client, upstream);
  forward(upstream, client);
}

/**
 * The gateway ends a tunnel: both sides get a close frame with the reason
 * (`gateway stopping` as 1001, anything else as 1008), and from this moment
 * nothing more is carried either way.
 */
export function endTunnel(client: WebSocket, upstream: WebSocket, reason: string): void {
  const code = reason === 'gateway stopping' ? GOING_AWAY : POLICY_VIOLATION;
  for (const side of [client, upstream]) closeWith(side, code, reason);
}

function forward(from: WebSocket, to: WebSocket): void {
  let paused = false;
  // One callback per direction, not one per message.
  const written = () => {
    if (paused && to.bufferedAmount < LOW_WATER_BYTES) {
      paused = false;
      from.resume();
    }
  };
  from.on('message', (data: RawData, isBinary: boolean) => {
    // A closing side takes nothing more: what its peer still sends is dropped.
    if (to.readyState !== WebSocket.OPEN) return;
    to.send(data, isBinary ? AS_BINARY : AS_TEXT, written);
    if (!paused && to.bufferedAmount > HIGH_WATER_BYTES) {
      paused = true;
      from.pause();
    }
  });
  from.on('ping', (data: Buffer) => {
    if (to.readyState === WebSocket.OPEN) to.ping(data);
  });
  from.on('pong', (data: Buffer) => {
    if (to.readyState === WebSocket.OPEN) to.pong(data);
  });
  from.on('close', (code: number, reason: Buffer) => {
    if (code === NO_STATUS) closeWith(to, undefined, undefined);
    else if (code === ABNORMAL) to.terminate();
    else closeWith(to, code, reason);
  });
  // `ws` closes a side after its error (a malformed frame, a message over the
  // limit) and 'close' follows, which closes the other side as above.
  from.on('error', () => {});
}

function closeWith(side: WebSocket, code: number | undefined, reason: string | Buffer | undefined): void {
  if (side.readyState !== WebSocket.OPEN) return;
  // A side paused for the other's sake must still read the answer to its close.
  side.resume();
  side.close(code, reason);
}
