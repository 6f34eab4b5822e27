import * as assert from 'uvu/assert';
import { fairLockKeys } from '../../src/fair-lock/keys.ts';
import { RedisClock } from '../../src/fair-lock/redis-clock.ts';
import { keySlot } from '../../src/runtime/slot.ts';
import { describe } from '../helpers/describe.ts';

// Two lock names whose keys live in different Cluster slots, so on different nodes of a Cluster.
const a = fairLockKeys('relock', 'a').lock;
const b = fairLockKeys('relock', 'b').lock;

describe('RedisClock', (it) => {
  it('puts the two test locks in different slots', () => {
    assert.is.not(keySlot(a), keySlot(b));
  });

  it('bounds the Redis TIME of the node serving a lock from that node\'s own samples, not from a later sample of another node', () => {
    const clock = new RedisClock();
    // a's node reported 10 000 for a script sent at local 0; b's node, 2 s behind, 8 010 for one sent later at 10.
    clock.sample(a, 10_000, 0);
    clock.sample(b, 8_010, 10);
    // At local 100, a's node is at most 10 100 (plus drift), whatever b's clock says.
    const latestA = clock.latest(a, 100);
    assert.ok(latestA >= 10_100 && latestA < 10_101, `a's node at most ${latestA}`);
    const latestB = clock.latest(b, 100);
    assert.ok(latestB >= 8_100 && latestB < 8_101, `b's node at most ${latestB}`);
  });

  it('keys the estimate by slot: every key of one lock shares it', () => {
    const clock = new RedisClock();
    const keys = fairLockKeys('relock', 'a');
    clock.sample(keys.queue, 5_000, 0);
    assert.ok(clock.latest(keys.lock, 0) >= 5_000 && clock.latest(keys.fence, 0) >= 5_000);
  });

  it('knows nothing of a node it has no sample from: Infinity, so a grant from it is confirmed before it is trusted', () => {
    const clock = new RedisClock();
    clock.sample(a, 10_000, 0);
    assert.is(clock.latest(b, 0), Number.POSITIVE_INFINITY);
  });

  it('lets the latest sample sent win, and ignores an older one answered late', () => {
    const clock = new RedisClock();
    clock.sample(a, 10_000, 50);
    clock.sample(a, 20_000, 10);
    assert.ok(clock.latest(a, 50) < 10_001);
    clock.sample(a, 9_000, 60); // the node's clock stepped back: the newer sample stands
    assert.ok(clock.latest(a, 60) < 9_001);
  });
});
