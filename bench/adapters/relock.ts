// relock itself, as published: the ESM bundle that `npm run build` (run first by `npm run bench`)
// makes from the tree the bench sits in, copied by run.ts when the run starts (RELOCK_BUNDLE), so
// that a rebuild of dist/ during the run cannot pull it from under the workers. Its variants
// (relock-fair, relock+diagnostics, relock-0.1.0) are this same adapter over another lock kind,
// with subscribers, or over another bundle: relockAdapter.
import type { Lock, LockClient as Client } from '../../dist/index.mjs';
import type { Create, Held } from './types.ts';

/** Where run.ts copied dist/index.mjs; dist/ itself when run outside run.ts. */
export const bundle = process.env.RELOCK_BUNDLE ?? new URL('../../dist/index.mjs', import.meta.url).href;

/** How a variant makes its locks; called once per client, so it may refuse (throw) at setup. */
export type LockKindOf = (client: Client) => (name: string) => Lock;

const plainLock: LockKindOf = (client) => (name) => client.lock(name);

/** What a variant passes as `redis` for the bench's URL (default: the URL itself), and how it is closed after the client. */
export type RedisOf = (url: string) => Promise<{ readonly redis: unknown; close(): Promise<void> }>;

const byUrl: RedisOf = async (url) => ({ redis: url, close: async () => undefined });

/**
 * The relock adapter over the bundle at `from` (a file: URL), with locks made by `kindOf`, over
 * `redisOf`'s client, with more client `options` (the layout).
 */
export function relockAdapter(from: string, kindOf: LockKindOf = plainLock, redisOf: RedisOf = byUrl, options: object = {}): Create {
  return async (url) => {
    const { LockClient } = (await import(from)) as { LockClient: typeof Client };
    const given = await redisOf(url);
    const client = new LockClient({ redis: given.redis as string, ...options });
    let make: (name: string) => Lock;
    try {
      make = kindOf(client);
    } catch (error) {
      await client.close();
      await given.close();
      throw error;
    }
    const locks = new Map<string, Lock>();
    const lockOf = (name: string): Lock => {
      let lock = locks.get(name);
      if (!lock) locks.set(name, (lock = make(name)));
      return lock;
    };
    return {
      acquire: (name): Promise<Held> => lockOf(name).acquire(),
      async reenter(name, rounds) {
        const lock = lockOf(name);
        const outer = await lock.acquire();
        const durations: number[] = [];
        await outer.run(async () => {
          for (let i = 0; i < rounds; i++) {
            const start = performance.now();
            const inner = await lock.acquire();
            if (inner.holdCount !== 2) throw new Error(`nested acquire gave holdCount ${inner.holdCount}, expected 2`);
            await inner.release();
            durations.push(performance.now() - start);
          }
        });
        await outer.release();
        return durations;
      },
      close: async () => {
        await client.close();
        await given.close();
      },
    };
  };
}

export const create: Create = relockAdapter(bundle);
