// relock itself, as published: the ESM bundle that `npm run build` (run first by `npm run bench`)
// makes from the tree the bench sits in, copied by run.ts when the run starts (RELOCK_BUNDLE), so
// that a rebuild of dist/ during the run cannot pull it from under the workers.
import type { Lock, LockClient as Client } from '../../dist/index.mjs';
import type { Create, Held } from './types.ts';

/** Where run.ts copied dist/index.mjs; dist/ itself when run outside run.ts. */
const bundle = process.env.RELOCK_BUNDLE ?? new URL('../../dist/index.mjs', import.meta.url).href;

export const create: Create = async (url) => {
  const { LockClient } = (await import(bundle)) as { LockClient: typeof Client };
  const client = new LockClient({ redis: url });
  const locks = new Map<string, Lock>();
  const lockOf = (name: string): Lock => {
    let lock = locks.get(name);
    if (!lock) locks.set(name, (lock = client.lock(name)));
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
    close: () => client.close(),
  };
};
