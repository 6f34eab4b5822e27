// The load a run puts on Redis, read from INFO: commands processed (commands that scripts call
// count too: Redis records them in commandstats), CPU time, connections opened.
import type { Redis } from 'ioredis';

/** Our own bookkeeping commands, left out of the count. */
const OWN = /^(info|config\|.*)$/

function fields(info: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of info.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0 && !line.startsWith('#')) map.set(line.slice(0, colon), line.slice(colon + 1));
  }
  return map;
}

export interface Snapshot {
  /** Commands processed since the last reset, by command name. */
  commands: Map<string, number>;
  /** Seconds Redis spent executing our own INFO/CONFIG since the last reset: taken out of the CPU. */
  ownSeconds: number;
  /** Redis CPU seconds (user + system) since it started. */
  cpuSeconds: number;
  /** Connections accepted since the last reset. */
  connections: number;
}

export async function snapshot(redis: Redis): Promise<Snapshot> {
  // Three small sections rather than INFO all: less of Redis's own CPU goes into measuring it.
  const replies = (await redis.pipeline().info('commandstats').info('cpu').info('stats').exec()) ?? [];
  const info = fields(replies.map(([, reply]) => String(reply)).join('\r\n'));
  const commands = new Map<string, number>();
  let ownMicros = 0;
  for (const [key, value] of info) {
    if (!key.startsWith('cmdstat_')) continue;
    const name = key.slice('cmdstat_'.length);
    if (OWN.test(name)) {
      ownMicros += Number(/usec=(\d+)/.exec(value)?.[1] ?? 0);
      continue;
    }
    commands.set(name, Number(/calls=(\d+)/.exec(value)?.[1] ?? 0));
  }
  return {
    commands,
    ownSeconds: ownMicros / 1e6,
    cpuSeconds: Number(info.get('used_cpu_user') ?? 0) + Number(info.get('used_cpu_sys') ?? 0),
    connections: Number(info.get('total_connections_received') ?? 0),
  };
}

export function totalCommands(snap: { commands: Map<string, number> }): number {
  let total = 0;
  for (const calls of snap.commands.values()) total += calls;
  return total;
}

/** Resets commandstats and the connection counter; CPU is read as a difference. */
export async function reset(redis: Redis): Promise<void> {
  await redis.config('RESETSTAT');
}

export async function serverInfo(redis: Redis): Promise<{ version: string; ioThreads: string }> {
  const info = fields(await redis.info('server'));
  const config = (await redis.config('GET', 'io-threads')) as string[];
  return { version: info.get('redis_version') ?? '?', ioThreads: config[1] ?? '?' };
}

/** The start of every lock name the bench uses. */
export const NAME_PREFIX = 'relock-bench:';

/**
 * Leaves no lock behind between runs (a run stopped on time may leave some held). A private server
 * is flushed; on one the bench did not start (REDIS_URL), only keys with the bench's names go.
 */
export async function clean(redis: Redis, everything: boolean): Promise<void> {
  if (everything) {
    await redis.flushall();
    return;
  }
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `*${NAME_PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await redis.unlink(...keys);
  } while (cursor !== '0');
}
