// relock status: what Redis holds for a lock, read from its keys in one MULTI (a consistent snapshot):
// the holders (owner field -> hold count), the lease left, the waiters and the last fencing token.
import { CONNECTION_DEFAULTS, ioredis, type Redis } from '../port/ioredis-connection.ts';
import { fairLockKeys } from '../fair-lock/keys.ts';
import { lockKeys } from '../lock/keys.ts';
import { classify, notALockHash } from '../runtime/script.ts';
import { exitCodeOf, say } from './report.ts';
import { COMMON_HELP, COMMON_OPTIONS, lockName, parse, prefixOption, redisUrl } from './usage.ts';

export const STATUS_USAGE = 'relock status <name> [--json] [--redis <url>] [--prefix <prefix>] [--fair]';

export const STATUS_HELP = `Usage: ${STATUS_USAGE}

Prints who holds the lock <name>: each holder's owner id (<clientId>:<contextId>) and hold count,
the lease left (TTL <ms>), the waiters and the last fencing token issued. Exits 0 whether the lock
is held or free; 69 when Redis cannot be reached.

Waiters: for a lock, the clients (processes) waiting for it, each counted once however many of its
acquires wait (the subscribers of its release channel); for a fair lock (--fair), every queued acquire.

Options:
  --json             one JSON object instead of text
${COMMON_HELP}`;

/** What Redis holds for one lock. */
export interface LockStatus {
  name: string;
  kind: 'lock' | 'fair-lock';
  key: string;
  holders: { owner: string; holdCount: number }[];
  /** Milliseconds left on the lease; -1 when the key has no expiry; null when the lock is free. */
  ttlMs: number | null;
  waiters: number;
  /** The last fencing token issued for this name (by the current holder or an earlier one); null if none is left. */
  fencingToken: number | null;
}

/** Reads a lock's status from its keys (the layout of src/lock/keys.ts and src/fair-lock/keys.ts). */
export async function readStatus(redis: Redis, prefix: string, name: string, fair: boolean): Promise<LockStatus> {
  const keys = fair ? fairLockKeys(prefix, name) : lockKeys(prefix, name);
  const multi = redis.multi().type(keys.lock).pttl(keys.lock).get(keys.fence);
  if ('queue' in keys) multi.llen(keys.queue);
  else multi.call('pubsub', 'numsub', keys.channel);
  multi.hgetall(keys.lock);
  const replies = (await multi.exec()) ?? [];
  const [type, pttl, fence, waiting, hash] = replies.map(([error, value], i) => {
    // A foreign value under the lock key fails HGETALL only: TYPE below names it.
    if (error && i !== 4) throw error;
    return value;
  });
  if (type !== 'none' && type !== 'hash') {
    throw notALockHash(keys.lock, type);
  }
  const holders = Object.entries((hash ?? {}) as Record<string, string>).map(([owner, count]) => ({ owner, holdCount: Number(count) }));
  return {
    name,
    kind: fair ? 'fair-lock' : 'lock',
    key: keys.lock,
    holders,
    ttlMs: type === 'none' ? null : (pttl as number),
    waiters: Array.isArray(waiting) ? Number(waiting[1]) : Number(waiting),
    fencingToken: fence === null ? null : Number(fence),
  };
}

/** The text form: one fact per line, `TTL <ms>` among them. */
export function formatStatus(s: LockStatus): string {
  const lines = [`${s.name}: ${s.holders.length === 0 ? 'free' : `held by ${s.holders.length} owner${s.holders.length > 1 ? 's' : ''}`} (${s.kind}, key ${s.key})`];
  for (const holder of s.holders) lines.push(`  holder ${holder.owner} hold count ${holder.holdCount}`);
  if (s.ttlMs !== null) lines.push(s.ttlMs < 0 ? '  TTL none (the key has no expiry)' : `  TTL ${s.ttlMs} ms`);
  lines.push(`  waiters ${s.waiters}`);
  lines.push(`  fencing token ${s.fencingToken ?? 'none'}${s.holders.length === 0 && s.fencingToken !== null ? ' (the last one issued)' : ''}`);
  return `${lines.join('\n')}\n`;
}

/** Reads `relock status`'s arguments; throws UsageError. Returns null for --help. */
export function parseStatus(argv: string[]) {
  const { values, positionals } = parse(argv, { ...COMMON_OPTIONS, json: { type: 'boolean' } });
  if (values.help) return null;
  return { name: lockName(positionals, 'status'), redis: redisUrl(values.redis), prefix: prefixOption(values.prefix), fair: values.fair ?? false, json: values.json ?? false };
}

export async function status(o: NonNullable<ReturnType<typeof parseStatus>>): Promise<number> {
  const redis = new (ioredis().Redis)(o.redis, { ...CONNECTION_DEFAULTS, lazyConnect: true });
  redis.on('error', () => undefined); // a failed command reports it
  try {
    const s = await readStatus(redis, o.prefix, o.name, o.fair).catch((error: unknown) => {
      throw classify(error, [(o.fair ? fairLockKeys : lockKeys)(o.prefix, o.name).lock], undefined, false);
    });
    process.stdout.write(o.json ? `${JSON.stringify(s)}\n` : formatStatus(s));
    return 0;
  } catch (error) {
    say(`could not read "${o.name}": ${(error as Error).message}`);
    return exitCodeOf(error);
  } finally {
    redis.disconnect();
  }
}
