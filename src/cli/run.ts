// relock run: takes the lock, runs the command with inherited stdio while the watchdog keeps the lock
// alive, forwards SIGINT/SIGTERM/SIGHUP, stops the command when the lock is lost, releases, and exits
// with the command's code.
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { Lease } from '../api.ts';
import type { LeaseImpl } from '../lease.ts';
import { LockClient } from '../client.ts';
import { LockError, LockNotHeldError } from '../errors.ts';
import { COMMON_HELP, COMMON_OPTIONS, EXIT, MIN_FIXED_LEASE_MS, MIN_WATCHDOG_LEASE_MS, UsageError, lockName, msOption, parse, prefixOption, redisUrl } from './usage.ts';
import { closeWithin, exitCodeOf, say } from './report.ts';
import { marginMs } from '../runtime/renewable.ts';
import { DEFAULTS } from '../validate.ts';

export const RUN_USAGE = 'relock run <name> [--wait <ms>] [--lease <ms>] [--at-least <ms>] [--at-most <ms>] [--redis <url>] [options] -- <command> [args...]';

export const RUN_HELP = `Usage: ${RUN_USAGE}

Runs <command> while holding the lock <name>, and exits with the command's exit code. When the lock
is not free within --wait, exits 75 without running the command. The lock is kept alive while the
command runs and released when it exits. SIGINT, SIGTERM and SIGHUP are forwarded to the command,
and relock waits for it to exit. If the lock is lost while the command runs, the command gets
SIGTERM (SIGKILL --kill-after ms later) and relock exits 70. The command finds the fencing token
in the environment variable RELOCK_FENCING_TOKEN.

Options:
  --wait <ms>        how long to wait for the lock: 0 tries once (the default), "Infinity" waits
                     for ever
  --lease <ms>       the watchdog lease, renewed every third of it while the command runs
                     (default 30000, at least ${MIN_WATCHDOG_LEASE_MS})
  --at-least <ms>    the lock stays taken until <ms> after it was acquired (by Redis's clock), also
                     when the command exits sooner: nodes whose cron fires up to <ms> apart run a job
                     once per window (--keep <ms> is the same)
  --at-most <ms>     the longest the command may hold the lock: then the lock is no longer renewed
                     and the command gets SIGTERM, as for a lost lock (exit 70)
  --kill-after <ms>  after a lost lock, SIGKILL the command if it has not exited <ms> after the
                     SIGTERM (default: half the time between the loss signal and the lease's end
                     on Redis, a twentieth of the lease, at most 500; a longer one lets the command
                     run on while another process may hold the lock, and relock says so)
  -q, --quiet        print nothing when the lock is busy (exit 75 all the same)
${COMMON_HELP}

Exit codes: the command's (128 + n when a signal n ended it); 64 usage error; 69 Redis unreachable;
70 the lock was lost while the command ran; 75 the lock was busy, the command did not run;
77 not allowed by Redis's ACL; 126 the command cannot be executed; 127 command not found.

Example:
  relock run nightly-report --wait 0 -- ./build-report.sh --day "$(date +%F)"`;

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

interface RunOptions {
  name: string;
  command: string;
  args: string[];
  redis: string;
  prefix: string;
  fair: boolean;
  waitMs: number;
  leaseMs: number | undefined;
  /** --at-least (or --keep): the lock stays taken until this long after its acquisition. */
  atLeastMs: number | undefined;
  /** --at-most: the hold's maxHoldMs. */
  atMostMs: number | undefined;
  /** Given by --kill-after; else half of marginMs(lease) (see killAfterOf). */
  killAfterMs: number | undefined;
  quiet: boolean;
}

/** Reads `relock run`'s arguments; throws UsageError. Returns null for --help. */
export function parseRun(argv: string[]): RunOptions | null {
  const { values, tokens } = parse(argv, {
    ...COMMON_OPTIONS,
    wait: { type: 'string' },
    lease: { type: 'string' },
    'at-least': { type: 'string' },
    keep: { type: 'string' },
    'at-most': { type: 'string' },
    'kill-after': { type: 'string' },
    quiet: { type: 'boolean', short: 'q' },
  });
  if (values.help) return null;
  const terminator = tokens.find((token) => token.kind === 'option-terminator')?.index;
  const before = tokens.filter((token) => token.kind === 'positional' && (terminator === undefined || token.index < terminator)).map((token) => (token as { value: string }).value);
  if (terminator === undefined) {
    throw new UsageError(before.length > 1 ? `Put the command after "--": relock run ${before[0]} [options] -- ${before.slice(1).join(' ')}` : 'relock run needs a command after "--"');
  }
  const command = argv.slice(terminator + 1);
  if (command.length === 0 || command[0] === '') throw new UsageError('relock run needs a command after "--"');
  if (values['at-least'] !== undefined && values.keep !== undefined) throw new UsageError('--keep is another name of --at-least: give one');
  const atLeastMs = msOption(values.keep === undefined ? '--at-least' : '--keep', values['at-least'] ?? values.keep, 0);
  const atMostMs = msOption('--at-most', values['at-most'], MIN_FIXED_LEASE_MS);
  if (atLeastMs !== undefined && atMostMs !== undefined && atLeastMs > atMostMs) throw new UsageError(`--at-least ${atLeastMs} is longer than --at-most ${atMostMs}`);
  if (atLeastMs !== undefined && values.fair) throw new UsageError('--at-least (or --keep) keeps a window with the lock, not with --fair');
  return {
    name: lockName(before, 'run'),
    command: command[0]!,
    args: command.slice(1),
    redis: redisUrl(values.redis),
    prefix: prefixOption(values.prefix),
    fair: values.fair ?? false,
    waitMs: msOption('--wait', values.wait, 0, true) ?? 0,
    leaseMs: msOption('--lease', values.lease, MIN_WATCHDOG_LEASE_MS),
    atLeastMs,
    atMostMs,
    killAfterMs: msOption('--kill-after', values['kill-after'], 0),
    quiet: values.quiet ?? false,
  };
}

/**
 * The grace between SIGTERM and SIGKILL after a lost lock, and how long the lock stays the holder's on
 * Redis after the loss signal: the watchdog signals a loss marginMs(lease) before the lease ends on
 * Redis (when it could not renew), so by default the command is killed halfway through that window,
 * before another process can take the lock.
 */
export function killAfterOf(o: Pick<RunOptions, 'killAfterMs' | 'leaseMs'>): { killAfterMs: number; windowMs: number } {
  const windowMs = marginMs(o.leaseMs ?? DEFAULTS.leaseMs);
  return { killAfterMs: o.killAfterMs ?? Math.floor(windowMs / 2), windowMs };
}

/** The command's end: its exit code or the signal that ended it, or why it could not start. */
type Ended = { code: number | null; signal: NodeJS.Signals | null } | { error: NodeJS.ErrnoException };

export async function run(o: RunOptions): Promise<number> {
  const client = new LockClient({ redis: o.redis, prefix: o.prefix, ...(o.leaseMs === undefined ? {} : { leaseMs: o.leaseMs }) });
  client.on('warning', (warning) => say(`warning: ${warning.message}`));
  const lock = o.fair ? client.fairLock(o.name) : client.lock(o.name);
  const { killAfterMs, windowMs } = killAfterOf(o);
  if (killAfterMs > windowMs) {
    say(`warning: --kill-after ${killAfterMs} ms is longer than the ${windowMs} ms the lock stays on Redis after a loss signal: after a lost lock the command may run beside the next holder for up to ${killAfterMs - windowMs} ms`);
  }

  let child: ChildProcess | undefined;
  let stoppedBy: NodeJS.Signals | undefined;
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (child) child.kill(signal);
    else {
      stoppedBy ??= signal;
      stop.abort(new Error(`relock received ${signal}`));
    }
  };
  for (const signal of FORWARDED) process.on(signal, onSignal);
  try {
    let lease: Lease;
    try {
      lease = await lock.acquire({
        waitMs: o.waitMs,
        signal: stop.signal,
        ...(o.atMostMs === undefined ? {} : { maxHoldMs: o.atMostMs }),
      });
    } catch (error) {
      if (stoppedBy) return 128 + constants.signals[stoppedBy];
      if ((error as LockError).code === 'ERR_LOCK_TIMEOUT') {
        if (!o.quiet) say(`"${o.name}" is held elsewhere${o.waitMs > 0 ? ` (waited ${o.waitMs} ms)` : ''}: not running ${o.command}`);
        return EXIT.busy;
      }
      say(`could not take "${o.name}": ${(error as Error).message}`);
      return exitCodeOf(error);
    }

    if (stoppedBy) {
      // The signal came between the acquire's reply and the spawn: the command never starts.
      await lease.release().catch(() => undefined);
      return 128 + constants.signals[stoppedBy];
    }
    let lost: string | undefined;
    let killTimer: NodeJS.Timeout | undefined;
    const started = spawn(o.command, o.args, { stdio: 'inherit', env: { ...process.env, RELOCK_FENCING_TOKEN: String(lease.fencingToken) } });
    child = started;
    const ended = new Promise<Ended>((resolve) => {
      started.once('exit', (code, signal) => resolve({ code, signal }));
      started.once('error', (error) => resolve({ error }));
    });
    const onLost = () => {
      lost = (lease.signal.reason as Error | undefined)?.message ?? 'lost';
      say(`the lock "${o.name}" was lost (${lost}): sending ${o.command} SIGTERM`);
      started.kill('SIGTERM');
      killTimer = setTimeout(() => {
        say(`${o.command} did not exit within ${killAfterMs} ms of SIGTERM: sending SIGKILL`);
        started.kill('SIGKILL');
      }, killAfterMs);
    };
    if (lease.signal.aborted) onLost();
    else lease.signal.addEventListener('abort', onLost, { once: true });

    const end = await ended;
    lease.signal.removeEventListener('abort', onLost);
    clearTimeout(killTimer);
    // --at-least: the lock stays taken until then (unless the command never ran), so a late node does
    // not run the job again. After --at-most the key is still this owner's: released.
    const overHeld = (lease.signal.reason as LockError | undefined)?.code === 'ERR_LOCK_MAX_HOLD';
    if (!lost || overHeld) {
      try {
        if (o.atLeastMs !== undefined && !('error' in end) && !overHeld) await (lease as LeaseImpl).releaseKeeping(o.atLeastMs);
        else await lease.release();
      } catch (error) {
        if (error instanceof LockNotHeldError) lost = error.message;
        else say(`could not release "${o.name}" (${(error as Error).message}): it ends with its lease`);
      }
    }

    if ('error' in end) {
      say(`cannot run ${o.command}: ${end.error.message}`);
      return end.error.code === 'ENOENT' ? EXIT.notFound : EXIT.notExecutable;
    }
    const code = end.signal ? 128 + constants.signals[end.signal] : (end.code ?? EXIT.error);
    if (lost) {
      say(`${o.command} exited with ${end.signal ?? `code ${end.code}`} after the lock "${o.name}" was lost (${lost}): exiting 70`);
      return EXIT.lost;
    }
    return code;
  } finally {
    for (const signal of FORWARDED) process.off(signal, onSignal);
    await closeWithin(client);
  }
}
