// `gatehouse check-config`: the checks `start` runs before it does anything
// (file, schema, content, environment), and nothing more: no file written, no
// socket opened. Exit 0 with "configuration OK", or 78 with every problem, for
// CI pipelines and for operators before a reload.
import { parseArgs } from 'node:util';
import { loadCheckedConfig } from '../config-load/check.js';
import { EXIT_OK, writeLine, type OutputIo } from './command.js';

export const CHECK_CONFIG_USAGE = `usage: gatehouse check-config [--config FILE]

  Checks the configuration as a start or a reload would: the YAML, every
  value, routes that clash, and the files it names (the users file must parse;
  the keys file, or its folder, must be usable). Writes nothing, opens no
  socket. Exit code 0 when it is sound, 78 with every problem otherwise.`;

export interface CheckConfigIo extends OutputIo {
  /** --config, if given; else $GATEHOUSE_CONFIG, else the embedded default. */
  configFile: string | undefined;
  env: NodeJS.ProcessEnv;
}

/** A bad config throws its ConfigError, which the command line turns into lines and exit code 78. */
export async function runCheckConfig(args: string[], io: CheckConfigIo): Promise<number> {
  parseArgs({ args, options: {}, allowPositionals: false, strict: true });
  const { file } = loadCheckedConfig({ ...(io.configFile !== undefined && { file: io.configFile }), env: io.env });
  writeLine(io.stdout, `configuration OK (${file})`);
  return EXIT_OK;
}
