// `gatehouse keys …`: rotates and lists the token signing keys of the keys
// file named by the config. A running gateway picks a rotation up through its
// file watch; tokens signed by the previous key keep verifying until they expire.
import { parseArgs } from 'node:util';
import type { AuditConfig, SigningAlgorithm, StoreConfig } from '../config/schema.js';
import { withConfiguredAudit } from './audit-session.js';
import { listKeys, rotateKeys } from '../tokens/key-rotation.js';
import { EXIT_FAILURE, EXIT_OK, formatTable, runGroup, writeLine, type CommandGroup, type OutputIo } from './command.js';

export interface KeysCommandIo extends OutputIo {
  keysFile: string;
  /** The configured algorithm: the new key's. */
  algorithm: SigningAlgorithm;
  /** How long a retired key keeps verifying: the refresh-token lifetime. */
  retainS: number;
  /** Where the rotation is recorded (the audit trail: the store's, or the local file). */
  audit?: AuditConfig;
  store?: StoreConfig;
}

/** `rotate` takes no argument. */
const noArguments = (run: (io: KeysCommandIo) => Promise<number>) => (args: string[], io: KeysCommandIo) => {
  parseArgs({ args, options: {}, allowPositionals: false, strict: true });
  return run(io);
};

export const KEYS_COMMANDS: CommandGroup<KeysCommandIo> = {
  name: 'keys',
  subcommands: {
    rotate: {
      synopsis: 'rotate',
      summary: 'sign with a new key (old keys keep verifying)',
      details: `  New tokens are signed with a new key of tokens.algorithm; the previous key
  keeps verifying for tokens.refreshTokenTtlS, then is dropped. With Redis,
  the running gateway publishes the new key and signs with it only once
  every other instance trusts it.`,
      run: noArguments(rotate),
    },
    list: { synopsis: 'list [--json]', summary: 'list signing keys: kid, algorithm, status, dates (no key material); --json for scripts', run: list },
  },
};

/** `args`: the words after `keys`. A KeysFileError names the file and what is wrong with it, never key material. */
export async function runKeysCommand(args: string[], io: KeysCommandIo): Promise<number> {
  return runGroup(KEYS_COMMANDS, args, io);
}

async function rotate(io: KeysCommandIo): Promise<number> {
  const previous = (await listKeys({ file: io.keysFile, retainS: io.retainS })).find((key) => key.status === 'signing');
  const { kid } = await withConfiguredAudit(io, io, async ({ recorder, actor }) => {
    const rotated = await rotateKeys({ file: io.keysFile, algorithm: io.algorithm, retainS: io.retainS });
    const details = { algorithm: io.algorithm, retainS: io.retainS, ...(previous && { retiredKid: previous.kid }) };
    recorder.record({ kind: 'signing_key.rotated', actor, subject: rotated.kid, from: io.keysFile, outcome: 'ok', details });
    return rotated;
  });
  writeLine(io.stdout, kid);
  return EXIT_OK;
}

async function list(args: string[], io: KeysCommandIo): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, allowPositionals: false, strict: true });
  const keys = await listKeys({ file: io.keysFile, retainS: io.retainS });
  if (keys.length === 0) {
    writeLine(io.stderr, `gatehouse: no keys file at ${io.keysFile} (the gateway creates it on its first start)`);
    return EXIT_FAILURE;
  }
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify(
        keys.map((k) => ({ kid: k.kid, alg: k.alg, status: k.status, createdAt: k.createdAt, retiredAt: k.retiredAt ?? null })),
        null,
        2,
      )}\n`,
    );
    return EXIT_OK;
  }
  const rows = keys.map((k) => [k.kid, k.alg, k.status, k.createdAt, k.retiredAt ?? '-']);
  writeLine(io.stdout, formatTable([['KID', 'ALG', 'STATUS', 'CREATED', 'RETIRED'], ...rows]));
  return EXIT_OK;
}
