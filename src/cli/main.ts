// The `relock` command (package.json "bin", built to dist/cli.mjs): `run`, `status`, `unlock`.
// From the source tree: node --import tsx src/cli/main.ts <command> ...
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hasIoredis } from '../port/ioredis-connection.ts';
import { say } from './report.ts';
import { parseRun, run, RUN_HELP, RUN_USAGE } from './run.ts';
import { parseStatus, status, STATUS_HELP, STATUS_USAGE } from './status.ts';
import { parseUnlock, unlock, UNLOCK_HELP, UNLOCK_USAGE } from './unlock.ts';
import { EXIT, UsageError } from './usage.ts';

const HELP = `Usage:
  ${RUN_USAGE}
  ${STATUS_USAGE}
  ${UNLOCK_USAGE}
  relock <command> --help | relock --help | relock --version

Distributed locks on Redis from the shell (docs/cli.md):
  run      run a command while holding a lock; exit 75 without running it when the lock is busy
  status   print a lock's holders, hold counts, TTL, waiters and fencing token
  unlock   force-unlock a lock, whoever holds it

Redis: --redis <url>, else $REDIS_URL, else redis://127.0.0.1:6379.`;

interface Command {
  usage: string;
  help: string;
  /** Parses and runs: null for --help; throws UsageError before any I/O. */
  prepare(argv: string[]): (() => Promise<number>) | null;
}

function command<O>(usage: string, help: string, parse: (argv: string[]) => O | null, exec: (options: O) => Promise<number>): Command {
  return {
    usage,
    help,
    prepare: (argv) => {
      const options = parse(argv);
      return options === null ? null : () => exec(options);
    },
  };
}

const COMMANDS: Record<string, Command> = {
  run: command(RUN_USAGE, RUN_HELP, parseRun, run),
  status: command(STATUS_USAGE, STATUS_HELP, parseStatus, status),
  unlock: command(UNLOCK_USAGE, UNLOCK_HELP, parseUnlock, unlock),
};

/** This package's version: the nearest package.json above this file (dist/ or src/cli/). */
function version(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'relock') return pkg.version ?? 'unknown';
    } catch {
      // not here: one level up
    }
  }
  return 'unknown';
}

/** Runs one command line; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    const topic = first === 'help' && rest[0] !== undefined && Object.hasOwn(COMMANDS, rest[0]) ? COMMANDS[rest[0]] : undefined;
    if (first === undefined) {
      process.stderr.write(`${HELP}\n`);
      return EXIT.usage;
    }
    process.stdout.write(`${topic?.help ?? HELP}\n`);
    return EXIT.ok;
  }
  if (first === '--version' || first === '-v') {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const chosen = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
  if (!chosen) {
    say(`unknown command "${first}": expected run, status or unlock (relock --help)`);
    return EXIT.usage;
  }
  let exec: (() => Promise<number>) | null;
  try {
    exec = chosen.prepare(rest);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    say(error.message);
    process.stderr.write(`Usage: ${chosen.usage}\n       relock ${first} --help\n`);
    return EXIT.usage;
  }
  if (exec === null) {
    process.stdout.write(`${chosen.help}\n`);
    return EXIT.ok;
  }
  if (!hasIoredis()) {
    say('the relock command connects to Redis with ioredis, which is not installed here: `npm install ioredis` (the command line cannot use node-redis or GLIDE; a library user passes those clients in)');
    return EXIT.config;
  }
  return exec();
}

const code = await main(process.argv.slice(2)).catch((error: unknown) => {
  say(`unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return EXIT.error;
});
process.exitCode = code;
// Everything is closed by now; should a socket linger anyway, a cron job must still end.
setTimeout(() => process.exit(code), 2_000).unref();
