// What every command shares: exit codes, the usage error, node:util parseArgs with relock's options,
// and the checks of option values (a bad value is a usage error, exit 64, before any I/O).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULTS, MAX_TIMER_MS, MIN_FIXED_LEASE_MS, MIN_WATCHDOG_LEASE_MS } from '../validate.ts';

/** Exit codes of relock itself (sysexits.h where one fits); docs/cli.md lists them all. */
export const EXIT = Object.freeze({
  ok: 0,
  /** An error of relock's own that has no code below (a foreign value under a lock key, ...). */
  error: 1,
  /** EX_USAGE: bad arguments or options. */
  usage: 64,
  /** EX_UNAVAILABLE: Redis could not be reached. */
  unavailable: 69,
  /** EX_SOFTWARE: the lock was lost while the command ran. */
  lost: 70,
  /** EX_TEMPFAIL: the lock was not free within --wait; the command did not run. */
  busy: 75,
  /** EX_NOPERM: the Redis user may not use relock's keys or commands (ACL). */
  forbidden: 77,
  /** EX_CONFIG: ioredis, which the command line connects with, is not installed. */
  config: 78,
  /** The command could not be executed (as in a shell). */
  notExecutable: 126,
  /** The command was not found (as in a shell). */
  notFound: 127,
});

/** Bad command-line input: relock prints the message and the command's usage line, exits 64. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** The options every command takes. */
export const COMMON_OPTIONS = {
  redis: { type: 'string' },
  prefix: { type: 'string' },
  fair: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies NonNullable<ParseArgsConfig['options']>;

export const COMMON_HELP = `  --redis <url>      Redis to use (default: $REDIS_URL, else ${DEFAULTS.redis})
  --prefix <prefix>  key namespace of the locks, as LockClient's \`prefix\` (default: ${DEFAULTS.prefix})
  --fair             the fair lock of that name (client.fairLock), apart from client.lock's
  -h, --help         this help`;

/** node:util parseArgs, strict, with its errors turned into usage errors. */
export function parse<O extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: O) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** The lock name: exactly one positional. */
export function lockName(positionals: readonly string[], command: string): string {
  if (positionals.length === 0) throw new UsageError(`relock ${command} needs a lock name`);
  if (positionals.length > 1) throw new UsageError(`relock ${command} takes one lock name, got ${positionals.length}: ${positionals.join(' ')}`);
  const name = positionals[0]!;
  if (name === '' || Buffer.byteLength(name) > 1024) throw new UsageError('The lock name must be a non-empty string of at most 1024 bytes');
  return name;
}

/** --redis, else REDIS_URL, else the default; a redis:// or rediss:// URL. */
export function redisUrl(option: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  const [url, from] = option !== undefined ? [option, '--redis'] : env.REDIS_URL ? [env.REDIS_URL, 'REDIS_URL'] : [DEFAULTS.redis, 'the default'];
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    // reported below
  }
  if (protocol !== 'redis:' && protocol !== 'rediss:') throw new UsageError(`${from} must be a redis:// or rediss:// URL, got "${url}"`);
  return url;
}

/** The key namespace, as LockClient checks it. */
export function prefixOption(option: string | undefined): string {
  if (option === undefined) return DEFAULTS.prefix;
  if (option === '') throw new UsageError('--prefix must not be empty');
  return option;
}

/** A whole number of milliseconds in [min, MAX_TIMER_MS]; `Infinity` where allowed. */
export function msOption(flag: string, value: string | undefined, min: number, infinity = false): number | undefined {
  if (value === undefined) return undefined;
  if (infinity && /^(inf|infinity)$/i.test(value)) return Number.POSITIVE_INFINITY;
  const ms = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(ms >= min && ms <= MAX_TIMER_MS)) {
    throw new UsageError(`${flag} must be a whole number of milliseconds from ${min} to ${MAX_TIMER_MS}${infinity ? ' or "Infinity"' : ''}, got "${value}"`);
  }
  return ms;
}

export { MIN_FIXED_LEASE_MS, MIN_WATCHDOG_LEASE_MS };
