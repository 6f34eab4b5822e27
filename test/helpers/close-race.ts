// close() racing an acquire at every microtask after its attempt's reply (issue 7, 2.5), over any
// client: the caller hooks the client's script replies (ioredis `evalsha`, node-redis `sendCommand`).
import type { LockClient } from '../../src/index.ts';
import { rejects, within } from './describe.ts';

/** Wraps `method` of `target` so that the next reply it resolves with first runs the hook set by the returned setter. */
export function hookReplies(target: object, method: string, counts: (args: unknown[]) => boolean = () => true): (hook: () => void) => void {
  const bag = target as Record<string, (...args: unknown[]) => Promise<unknown>>;
  const original = bag[method]!.bind(target);
  let onReply: (() => void) | undefined;
  bag[method] = (...args) =>
    original(...args).then((reply) => {
      if (counts(args)) {
        const hook = onReply;
        onReply = undefined;
        hook?.();
      }
      return reply;
    });
  return (hook) => (onReply = hook);
}

/**
 * For offsets 0..15: a client from `make` acquires `name` (held elsewhere) and is closed `offset`
 * microtasks after its attempt's reply. Returns each acquire that did not reject with the
 * AbortError of close(), described.
 */
export async function closeAtEveryOffset(make: () => LockClient, name: string, nextReply: (hook: () => void) => void): Promise<string[]> {
  const wrong: string[] = [];
  for (let offset = 0; offset <= 15; offset++) {
    const client = make();
    const lock = client.lock(name);
    await lock.isLocked();
    nextReply(() => {
      let chain = Promise.resolve();
      for (let i = 0; i < offset; i++) chain = chain.then();
      void chain.then(() => client.close());
    });
    const error = await within(rejects(lock.acquire()), 2_000, `acquire closed at offset ${offset}`);
    if (!(error instanceof DOMException && error.name === 'AbortError')) wrong.push(`offset ${offset}: ${error.name} ${error.code ?? ''} ${error.message}`);
    await client.close();
  }
  return wrong;
}
