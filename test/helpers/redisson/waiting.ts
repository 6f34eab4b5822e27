// How a Redisson waiter waits (RedissonLock.tryLock/lock, RedissonPermitExpirableSemaphore.acquire):
// one attempt; on failure subscribe, then attempt again and wait for a message or the time the failed
// attempt named, until taken or out of time. A lost message costs at most that time.
import type { StandInContext } from './context.ts';
import type { EntryKind } from './pubsub.ts';

/** A script's answer: taken (with what the caller gets), or not, with how long to wait at most (null: for a message). */
export type Attempt<T> = { readonly taken: true; readonly value: T } | { readonly taken: false; readonly ttlMs: number | null };

export interface WaitPlan<T> {
  attempt(): Promise<Attempt<T>>;
  readonly channel: string;
  readonly kind: EntryKind;
  /** How long to try; undefined: without a limit (lock(), acquire()). */
  readonly waitMs: number | undefined;
  /** What a waiter out of time does before giving up (the fair lock leaves its queue). */
  giveUp?(): Promise<void>;
}

/** The attempt's value, or null when waitMs ran out first. */
export async function acquireWaiting<T>(ctx: StandInContext, plan: WaitPlan<T>): Promise<T | null> {
  const deadline = plan.waitMs === undefined ? Infinity : performance.now() + plan.waitMs;
  const left = () => deadline - performance.now();
  const giveUp = async () => {
    await plan.giveUp?.();
    return null;
  };
  let result = await plan.attempt();
  if (result.taken) return result.value;
  if (left() <= 0) return giveUp();
  const entry = await ctx.pubsub.subscribe(plan.channel, plan.kind);
  try {
    for (;;) {
      if (left() <= 0) return await giveUp();
      result = await plan.attempt();
      if (result.taken) return result.value;
      if (left() <= 0) return await giveUp();
      const ttlMs = result.ttlMs !== null && result.ttlMs >= 0 ? result.ttlMs : Infinity;
      await entry.wait(Math.min(ttlMs, left()));
      ctx.redis.assertAlive();
    }
  } finally {
    ctx.pubsub.unsubscribe(plan.channel);
  }
}
