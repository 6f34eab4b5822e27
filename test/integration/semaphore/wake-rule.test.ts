// The semaphore's wake rule on its own (no Redis): a message of k freed permits wakes the heads of
// a client's queue while their needs fit in k, the first whatever its need, in order.
import * as assert from 'uvu/assert';
import { Waiter } from '../../../src/runtime/waiter.ts';
import { wakePermits } from '../../../src/semaphore/semaphore.ts';
import { describe } from '../../helpers/describe.ts';

/** Waiters of the given needs, and which of them a message woke (a wake-up while awake is remembered: sleep resolves at once). */
async function woken(needs: number[], message: string): Promise<number[]> {
  const queue = needs.map((need) => new Waiter(need));
  wakePermits(queue, message);
  const stop = new AbortController();
  const result = await Promise.all(queue.map((waiter) => Promise.race([waiter.sleep(10_000, stop.signal).then(() => true), new Promise((resolve) => setTimeout(resolve, 20, false))])));
  stop.abort();
  return result.flatMap((wasWoken, i) => (wasWoken ? [i] : []));
}

describe('wakePermits', (it) => {
  it('wakes as many one-permit waiters as permits came free, in order', async () => {
    assert.equal(await woken([1, 1, 1, 1, 1], '2'), [0, 1]);
    assert.equal(await woken([1, 1, 1], '5'), [0, 1, 2]);
  });

  it('wakes the head whatever its need, and stops at the first waiter that does not fit', async () => {
    assert.equal(await woken([3, 1, 1], '1'), [0], 'a head needing 3 woken by 1: it tries, nobody behind it overtakes');
    assert.equal(await woken([1, 2, 1], '2'), [0], 'the second needs 2 with 1 left: it and those behind it sleep');
    assert.equal(await woken([2, 1, 1], '3'), [0, 1]);
  });

  it('wakes one waiter for a message that is not a positive count', async () => {
    assert.equal(await woken([1, 1], 'release'), [0]);
    assert.equal(await woken([1, 1], '0'), [0]);
  });
});
