// What the `gatehouse users …` and `gatehouse apikeys …` commands need from
// the outside world, passed in rather than taken from `process`, so tests run
// them in-process with plain streams. Also the few I/O helpers they share.
import type { AuditConfig, StoreConfig } from '../config/schema.js';
import { CliError, UndeclaredNameError, type OutputIo } from './command.js';

export interface CliIo extends OutputIo {
  /** The users file the commands read and replace; with `usersIn: store` only named (a gateway's first start seeds from it). */
  usersFile: string;
  /** Where the users live (`identity.usersIn`); absent: the users file. */
  usersIn?: 'file' | 'store';
  /** The configured store: `users unlock` clears login throttling there; `apikeys` lists and revokes users' own keys there. */
  store?: StoreConfig;
  /** Where the audit trail is (`audit`); absent: nothing is recorded (tests of other things). */
  audit?: AuditConfig;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** The roles and scopes the config declares (`authorization`); an empty list declares none, and any name goes. */
  declared?: { roles: readonly string[]; scopes: readonly string[] };
}

/**
 * Refuses a role or scope the config does not declare, when it declares any:
 * a typo given to a user or a key would silently grant nothing, since route
 * rules may only name declared ones.
 */
export function assertDeclared(io: CliIo, kind: 'roles' | 'scopes', names: readonly string[]): void {
  const declared = io.declared?.[kind] ?? [];
  if (declared.length === 0) return;
  const unknown = names.filter((name) => !declared.includes(name));
  if (unknown.length === 0) return;
  const what = kind === 'roles' ? 'role' : 'scope';
  throw new UndeclaredNameError(
    `${what}${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} not declared in the config's authorization.${kind}; declared: ${declared.join(', ')}`,
  );
}

/** `--json`: one JSON document on stdout, for scripts. */
export function writeJson(io: OutputIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Control characters in operator-given text (labels) would break the table or drive the terminal. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point here
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ');
}

/** The whole of stdin as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  return Buffer.concat(chunks).toString('utf8');
}

type RawModeStream = NodeJS.ReadableStream & { isTTY?: boolean; setRawMode(mode: boolean): unknown };

/** True when stdin is a terminal whose echo can be switched off. */
export function canPromptHidden(stream: CliIo['stdin']): stream is RawModeStream {
  return stream.isTTY === true && typeof (stream as Partial<RawModeStream>).setRawMode === 'function';
}

/**
 * Asks each prompt in turn on stderr (stdout may be a pipe) and reads one line
 * per prompt with the terminal's echo off: raw mode, so nothing typed is shown
 * and this code handles Enter, Backspace, Ctrl-C and Ctrl-D itself.
 */
export function promptHidden(io: CliIo, prompts: readonly string[]): Promise<string[]> {
  const stdin = io.stdin;
  if (!canPromptHidden(stdin)) return Promise.reject(new CliError('stdin is not a terminal: cannot prompt'));
  const answers: string[] = [];
  let current = '';
  let afterCarriageReturn = false;

  return new Promise((resolve, reject) => {
    const finish = (error?: Error): void => {
      stdin.removeListener('data', onData);
      stdin.removeListener('end', onEnd);
      stdin.setRawMode(false);
      stdin.pause();
      if (error) reject(error);
      else resolve(answers);
    };
    const onData = (chunk: string | Buffer): void => {
      for (const char of typeof chunk === 'string' ? chunk : chunk.toString('utf8')) {
        // A pasted "\r\n" is one Enter, not an Enter and an empty answer.
        const skip = char === '\n' && afterCarriageReturn;
        afterCarriageReturn = char === '\r';
        if (skip) continue;
        if (char === '\r' || char === '\n') {
          io.stderr.write('\n');
          answers.push(current);
          current = '';
          if (answers.length === prompts.length) return finish();
          io.stderr.write(prompts[answers.length]!);
        } else if (char === '\u0003' || (char === '\u0004' && current === '')) {
          io.stderr.write('\n');
          return finish(new CliError('cancelled'));
        } else if (char === '\u007f' || char === '\b') {
          current = Array.from(current).slice(0, -1).join('');
        } else if (char >= ' ') {
          current += char;
        }
      }
    };
    const onEnd = (): void => finish(new CliError('stdin closed before the answer was complete'));

    stdin.setEncoding('utf8');
    stdin.setRawMode(true);
    stdin.on('data', onData);
    stdin.on('end', onEnd);
    io.stderr.write(prompts[0] ?? '');
    stdin.resume();
  });
}
