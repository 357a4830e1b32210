// The whole check of a config, as `gatehouse start`, `gatehouse check-config`
// and a hot reload run it: the file, the schema with its content checks, and
// the environment checks, every problem reported in one ConfigError. Nothing
// here writes a file or opens a socket, so it can run before anything else.
import { dirname } from 'node:path';
import { checkEnvironment } from './environment.js';
import { upstreamTlsProblems } from './upstream-tls-files.js';
import { ConfigError, configFilePath, DEFAULT_CONFIG_FILE, readConfigFile, validateConfig, type LoadConfigOptions } from './load.js';
import type { Config } from '../config/schema.js';

export interface CheckedConfig {
  config: Config;
  /** The file it came from, resolved. */
  file: string;
}

export function loadCheckedConfig(options: LoadConfigOptions = {}): CheckedConfig {
  const env = options.env ?? process.env;
  const file = configFilePath(options);
  const { config, problems, files, label } = validateConfig(readConfigFile(file), { baseDir: dirname(file), env, source: file });
  // Only the embedded default's own files, not ones the environment put in their place.
  const embedded = file === DEFAULT_CONFIG_FILE;
  // The upstreams' TLS files: judged only on a config that parsed (their paths are resolved in it).
  if (config !== undefined) problems.push(...upstreamTlsProblems(config));
  problems.push(
    ...checkEnvironment(files, {
      embeddedDefault: { usersFile: embedded && !env.GATEHOUSE_USERS_FILE, keysFile: embedded && !env.GATEHOUSE_KEYS_FILE },
      label,
    }),
  );
  if (config === undefined || problems.length > 0) throw new ConfigError(file, problems);
  return { config, file };
}
