// What the fair-lock suites share: the Redis keys of a fair lock, waiting until the Redis queue
// holds so many entries, and a wall clock comparable across processes.
import type { Redis } from 'ioredis';
import { eventually } from '../../helpers/describe.ts';

export { sharedNow } from './clock.ts';

export function fairKeys(name: string, prefix = 'relock') {
  const base = `${prefix}:{${name}}:fair`;
  return { lock: base, queue: `${base}:q`, deadlines: `${base}:d`, fence: `${base}:fence` };
}

/** Resolves once the lock's Redis queue holds `length` entries. */
export async function queued(admin: Redis, name: string, length: number, ms = 5_000): Promise<void> {
  await eventually(async () => (await admin.llen(fairKeys(name).queue)) === length, `${length} queued on "${name}"`, ms);
}

/** Every key of the lock that is left (the fence key is expected to stay, with its TTL). */
export async function keysLeft(admin: Redis, name: string): Promise<string[]> {
  return (await admin.keys(`relock:{${name}}*`)).filter((key) => key !== fairKeys(name).fence).sort();
}

/** The channel a client's grants on the lock arrive on. */
export function grantChannel(name: string, clientId: string): string {
  return `relock:{${name}}:fair:g:${clientId}`;
}

/** Redis TIME in milliseconds. */
export async function redisNowMs(admin: Redis): Promise<number> {
  const [seconds, micros] = await admin.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Resolves once nobody listens on the channel any more (a dead process's socket was closed). */
export async function unheard(admin: Redis, channel: string): Promise<void> {
  await eventually(async () => Number(((await admin.pubsub('NUMSUB', channel)) as [string, number])[1]) === 0, `nobody on ${channel}`);
}

/**
 * A waiter that is only a subscribed socket: queued like a real one (entry and deadline), it hears
 * its grant and never confirms it, as a process that dies between the grant and its confirm.
 */
export async function silentWaiter(admin: Redis, listener: Redis, name: string, deadlineMs = 10_000): Promise<{ owner: string; granted: Promise<string> }> {
  const clientId = `silent-${Math.random().toString(36).slice(2)}`;
  const owner = `${clientId}:0`;
  const granted = new Promise<string>((resolve) => listener.once('message', (_channel: string, message: string) => resolve(message)));
  await listener.subscribe(grantChannel(name, clientId));
  const keys = fairKeys(name);
  await admin.rpush(keys.queue, owner);
  await admin.zadd(keys.deadlines, (await redisNowMs(admin)) + deadlineMs, owner);
  return { owner, granted };
}

/** Measured stalls, printed at the end of the run when RELOCK_FAIR_REPORT is set. */
const stalls: string[] = [];
export function reportStall(what: string, ms: number): void {
  stalls.push(`${what}: ${ms.toFixed(1)} ms`);
}
process.on('exit', () => {
  if (process.env.RELOCK_FAIR_REPORT && stalls.length > 0) process.stderr.write(`fair-lock stalls:\n  ${stalls.join('\n  ')}\n`);
});
