// `gatehouse keys …`: rotates and lists the token signing keys of the keys
// file named by the config. A running gateway picks a rotation up through its
// file watch; tokens signed by the previous key keep verifying until they expire.
import type { SigningAlgorithm } from '../config/schema.js';
import { listKeys, rotateKeys } from '../tokens/key-rotation.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, formatTable, writeLine } from './io.js';

export interface KeysCommandIo {
  keysFile: string;
  /** The configured algorithm: the new key's. */
  algorithm: SigningAlgorithm;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainS: number;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

const USAGE = `usage: gatehouse keys rotate
       gatehouse keys list

  rotate  signs new tokens with a new key of tokens.algorithm; the previous
          key keeps verifying for tokens.refreshTokenTtlS, then is dropped
  list    shows each key's kid, algorithm, status and dates (no key material)`;

/** `args`: the words after `keys`. */
export async function runKeysCommand(args: string[], io: KeysCommandIo): Promise<number> {
  const [command, ...rest] = args;
  if (command === 'help' || command === '--help' || command === '-h') {
    writeLine(io.stdout, USAGE);
    return EXIT_OK;
  }
  if ((command !== 'rotate' && command !== 'list') || rest.length > 0) {
    const problem =
      command === undefined ? 'missing command' : rest.length > 0 ? `unexpected argument: ${rest[0]}` : `unknown command: keys ${command}`;
    writeLine(io.stderr, `gatehouse: ${problem}`);
    writeLine(io.stderr, USAGE);
    return EXIT_USAGE;
  }
  try {
    return command === 'rotate' ? await rotate(io) : await list(io);
  } catch (error) {
    // A KeysFileError names the file and what is wrong with it, never key material.
    writeLine(io.stderr, `gatehouse: ${error instanceof Error ? error.message : String(error)}`);
    return EXIT_FAILURE;
  }
}

async function rotate(io: KeysCommandIo): Promise<number> {
  const { kid } = await rotateKeys({ file: io.keysFile, algorithm: io.algorithm, retainS: io.retainS });
  writeLine(io.stdout, kid);
  return EXIT_OK;
}

async function list(io: KeysCommandIo): Promise<number> {
  const keys = await listKeys({ file: io.keysFile, retainS: io.retainS });
  if (keys.length === 0) {
    writeLine(io.stderr, `gatehouse: no keys file at ${io.keysFile} (the gateway creates it on its first start)`);
    return EXIT_FAILURE;
  }
  const rows = keys.map((k) => [k.kid, k.alg, k.status, k.createdAt, k.retiredAt ?? '-']);
  writeLine(io.stdout, formatTable([['KID', 'ALG', 'STATUS', 'CREATED', 'RETIRED'], ...rows]));
  return EXIT_OK;
}
