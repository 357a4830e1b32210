#!/usr/bin/env node
// The `gatehouse` command: `start` runs the gateway, `check-config` checks its
// configuration, `users`, `apikeys` and `keys` manage the users file and the
// signing keys named by the config (see cli/command-line.ts).
import { KEEPS_RUNNING, runCommandLine } from './cli/command-line.js';

const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env };

runCommandLine(process.argv.slice(2), io).then(
  (code) => {
    if (code === KEEPS_RUNNING) return;
    // A failed start may leave watchers or sockets open: a failure exits now
    // (stderr is synchronous, and the logger flushes on exit).
    if (code !== 0) process.exit(code);
    process.exitCode = code;
  },
  (error: unknown) => {
    // runCommandLine answers every failure itself; this is the last resort.
    process.stderr.write(`gatehouse: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
