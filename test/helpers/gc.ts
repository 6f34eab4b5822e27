// Garbage collection on demand: V8's --expose-gc, set at run time (the same flag as `node --expose-gc`).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Collects garbage and lets finalizers run, until `done()` or `rounds` collections. */
export async function collectUntil(done: () => boolean, rounds = 50): Promise<void> {
  for (let i = 0; i < rounds && !done(); i++) {
    gc();
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
