// relock unlock: force-unlocks a lock whoever holds it, and wakes its waiters (Lock#forceUnlock).
import { LockClient } from '../client.ts';
import { closeWithin, exitCodeOf, say } from './report.ts';
import { COMMON_HELP, COMMON_OPTIONS, lockName, parse, prefixOption, redisUrl } from './usage.ts';

export const UNLOCK_USAGE = 'relock unlock <name> [--redis <url>] [--prefix <prefix>] [--fair]';

export const UNLOCK_HELP = `Usage: ${UNLOCK_USAGE}

Deletes the lock <name> whoever holds it and wakes its waiters (Lock#forceUnlock). A holder learns
it at its next renewal: a command under \`relock run\` then gets SIGTERM. Exits 0 whether the lock
was held or already free (it says which); 69 when Redis cannot be reached.

Options:
${COMMON_HELP}`;

/** Reads `relock unlock`'s arguments; throws UsageError. Returns null for --help. */
export function parseUnlock(argv: string[]) {
  const { values, positionals } = parse(argv, COMMON_OPTIONS);
  if (values.help) return null;
  return { name: lockName(positionals, 'unlock'), redis: redisUrl(values.redis), prefix: prefixOption(values.prefix), fair: values.fair ?? false };
}

export async function unlock(o: NonNullable<ReturnType<typeof parseUnlock>>): Promise<number> {
  const client = new LockClient({ redis: o.redis, prefix: o.prefix });
  try {
    const deleted = await (o.fair ? client.fairLock(o.name) : client.lock(o.name)).forceUnlock();
    process.stdout.write(deleted ? `unlocked ${o.name}\n` : `${o.name} was not locked\n`);
    return 0;
  } catch (error) {
    say(`could not unlock "${o.name}": ${(error as Error).message}`);
    return exitCodeOf(error);
  } finally {
    await closeWithin(client);
  }
}
