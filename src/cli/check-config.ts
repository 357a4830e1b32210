// `gatehouse check-config`: the checks `start` runs before it does anything
// (file, schema, content, environment), and nothing more: no file written, no
// socket opened. Exit 0 with "configuration OK", or 78 with every problem, for
// CI pipelines and for operators before a reload. `--production` then runs the
// production checklist (config-load/production-checks.ts): every finding is
// one line with its fix, exit 78 too, so a pipeline refuses a demo config.
import { parseArgs } from 'node:util';
import { loadCheckedConfig } from '../config-load/check.js';
import { ConfigError } from '../config-load/load.js';
import { PRODUCTION_CHECKS, productionFindings } from '../config-load/production-checks.js';
import { EXIT_OK, writeLine, type OutputIo } from './command.js';

export const CHECK_CONFIG_USAGE = `usage: gatehouse check-config [--config FILE] [--production]

  Checks the configuration as a start or a reload would: the YAML, every
  value, routes that clash, and the files it names (the users file must parse;
  the keys file, or its folder, must be usable). Writes nothing, opens no
  socket. Exit code 0 when it is sound, 78 with every problem otherwise.

  --production  also the production checklist: the demo user or its API key,
                the in-memory store, an http issuer on a listener other hosts
                reach, a missing service token, a weak provider secret or a
                provider's plain-http issuer (of each provider, among several),
                the keys file inside the config folder. Each finding is one line
                with its fix; any finding is exit 78.`;

export interface CheckConfigIo extends OutputIo {
  /** --config, if given; else $GATEHOUSE_CONFIG, else the embedded default. */
  configFile: string | undefined;
  env: NodeJS.ProcessEnv;
}

/** A bad config throws its ConfigError, which the command line turns into lines and exit code 78. */
export async function runCheckConfig(args: string[], io: CheckConfigIo): Promise<number> {
  const { values } = parseArgs({ args, options: { production: { type: 'boolean' } }, allowPositionals: false, strict: true });
  const { config, file } = loadCheckedConfig({ ...(io.configFile !== undefined && { file: io.configFile }), env: io.env });
  if (values.production !== true) {
    writeLine(io.stdout, `configuration OK (${file})`);
    return EXIT_OK;
  }
  const findings = await productionFindings({ config, file });
  if (findings.length > 0) throw new ConfigError(file, findings);
  writeLine(io.stdout, `configuration OK for production (${file}): ${PRODUCTION_CHECKS.length} production checks passed`);
  return EXIT_OK;
}
