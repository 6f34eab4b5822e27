import * as assert from 'uvu/assert';
import { Waiter } from '../../src/runtime/waiter.ts';
import { MAX_TIMER_MS } from '../../src/validate.ts';
import { describe } from '../helpers/describe.ts';
import { FakeClock, flush } from '../helpers/fake-clock.ts';

/** A promise's outcome, readable synchronously once the microtasks ran. */
function track(promise: Promise<unknown>) {
  const outcome = { settled: false, resolved: false, error: undefined as unknown };
  promise.then(
    () => Object.assign(outcome, { settled: true, resolved: true }),
    (error: unknown) => Object.assign(outcome, { settled: true, error }),
  );
  return outcome;
}

const never = () => new AbortController().signal;

describe('Waiter#sleep', (it) => {
  it('resolves when its time has passed, not a millisecond before', async () => {
    const clock = new FakeClock();
    const sleeping = track(new Waiter(1, clock).sleep(100, never()));
    clock.advance(99);
    await flush();
    assert.not.ok(sleeping.settled);
    clock.advance(1);
    await flush();
    assert.ok(sleeping.resolved);
    assert.is(clock.pending, 0);
  });

  it('caps a sleep longer than a timer can hold at the largest delay, instead of firing at once', async () => {
    const clock = new FakeClock();
    const sleeping = track(new Waiter(1, clock).sleep(30 * 24 * 3_600_000, never()));
    assert.equal(clock.delays, [MAX_TIMER_MS]);
    clock.advance(MAX_TIMER_MS - 1);
    await flush();
    assert.not.ok(sleeping.settled);
    clock.advance(1);
    await flush();
    assert.ok(sleeping.resolved);
  });

  it('remembers what it waits for', () => {
    assert.is(new Waiter().need, 1);
    assert.is(new Waiter(3, new FakeClock()).need, 3);
  });
});

describe('Waiter#wake', (it) => {
  it('ends a sleep at once and disarms its timer and abort listener', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const stop = new AbortController();
    const sleeping = track(waiter.sleep(10_000, stop.signal));
    assert.is(clock.pending, 1);
    waiter.wake();
    await flush();
    assert.ok(sleeping.resolved);
    assert.is(clock.pending, 0, 'the timer was cleared');
    stop.abort(new Error('late abort'));
    await flush();
    assert.is(sleeping.error, undefined, 'an abort after the wake changes nothing');
  });

  it('keeps a wake-up that arrives while awake for the next sleep, once', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    waiter.wake(); // it was attempting when the release came
    const first = track(waiter.sleep(10_000, never()));
    await flush();
    assert.ok(first.resolved, 'the pending wake-up ends the next sleep at once');
    assert.is(clock.pending, 0, 'without arming a timer');
    const second = track(waiter.sleep(10_000, never()));
    await flush();
    assert.not.ok(second.settled, 'the wake-up is used up');
    clock.advance(10_000);
    await flush();
    assert.ok(second.resolved);
  });

  it('keeps one pending wake-up however many arrive while awake', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    waiter.wake();
    waiter.wake();
    await waiter.sleep(1_000, never());
    const next = track(waiter.sleep(1_000, never()));
    await flush();
    assert.not.ok(next.settled);
  });

  it('counts every wake-up that arrives while awake when it hands wake-ups on: one sleep ended per wake-up', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock, true);
    waiter.wake();
    waiter.wake();
    await waiter.sleep(1_000, never());
    await waiter.sleep(1_000, never());
    const third = track(waiter.sleep(1_000, never()));
    await flush();
    assert.not.ok(third.settled, 'two wake-ups end two sleeps, no more');
  });

  it('does not carry a wake-up that ended a sleep over to the next one', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const first = waiter.sleep(1_000, never());
    waiter.wake();
    await first;
    const second = track(waiter.sleep(1_000, never()));
    await flush();
    assert.not.ok(second.settled);
  });

  it('does not carry a sleep that ended by its timer over as a wake-up', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const first = waiter.sleep(100, never());
    clock.advance(100);
    await first;
    const second = track(waiter.sleep(100, never()));
    await flush();
    assert.not.ok(second.settled);
  });
});

describe('Waiter#unused', (it) => {
  it('counts the wake-ups that came while awake, and the one it was trying on when it leaves awake without the lock', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock, true);
    const stop = new AbortController();
    const sleeping = waiter.sleep(10_000, stop.signal);
    assert.is(waiter.unused(false), 0, 'asleep: it holds no wake-up');
    waiter.wake();
    await sleeping;
    assert.is(waiter.unused(true), 0, 'woken, then acquired: the wake-up was used');
    assert.is(waiter.unused(false), 1, 'woken, then gone without the lock: the wake-up was not used');
    waiter.wake(); // a second release while it attempts
    assert.is(waiter.unused(true), 1);
    assert.is(waiter.unused(false), 2);
  });

  it('is always 0 for a waiter that does not hand wake-ups on (a lock\'s)', () => {
    const waiter = new Waiter(1, new FakeClock());
    waiter.wake();
    waiter.wake();
    assert.is(waiter.unused(true), 0);
    assert.is(waiter.unused(false), 0);
  });
});

describe('Waiter#shorten', (it) => {
  it('moves the wake-up earlier', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const sleeping = track(waiter.sleep(30_000, never()));
    clock.advance(1_000);
    waiter.shorten(300);
    clock.advance(299);
    await flush();
    assert.not.ok(sleeping.settled);
    clock.advance(1);
    await flush();
    assert.ok(sleeping.resolved);
    assert.is(clock.pending, 0, 'the longer timer was cleared');
  });

  it('never moves the wake-up later', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const sleeping = track(waiter.sleep(500, never()));
    clock.advance(100);
    waiter.shorten(1_000); // would end at 1100, after 500
    waiter.shorten(400); // would end at 500: the same, not earlier
    assert.is(clock.pending, 1);
    clock.advance(400);
    await flush();
    assert.ok(sleeping.resolved);
  });

  it('can shorten twice, each time earlier', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const sleeping = track(waiter.sleep(10_000, never()));
    waiter.shorten(5_000);
    waiter.shorten(200);
    clock.advance(200);
    await flush();
    assert.ok(sleeping.resolved);
    assert.is(clock.pending, 0);
  });

  it('does nothing while awake, and is not remembered for the next sleep', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    waiter.shorten(10);
    const sleeping = track(waiter.sleep(1_000, never()));
    clock.advance(10);
    await flush();
    assert.not.ok(sleeping.settled);
    clock.advance(990);
    await flush();
    assert.ok(sleeping.resolved);
  });
});

describe('Waiter abort', (it) => {
  it('rejects with the signal reason when stopped during a sleep, and disarms the timer', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const stop = new AbortController();
    const sleeping = track(waiter.sleep(10_000, stop.signal));
    const reason = new Error('stopped');
    stop.abort(reason);
    await flush();
    assert.is(sleeping.error, reason);
    assert.is(clock.pending, 0);
    waiter.wake(); // after the abort: no sleep to end, kept for a next one
    assert.ok(await waiter.sleep(10_000, never()).then(() => true));
  });

  it('rejects at once, with no timer left, when the signal is already aborted', async () => {
    const clock = new FakeClock();
    const stop = new AbortController();
    const reason = new Error('already');
    stop.abort(reason);
    const sleeping = track(new Waiter(1, clock).sleep(10_000, stop.signal));
    await flush();
    assert.is(sleeping.error, reason);
    assert.is(clock.pending, 0);
  });

  it('leaves no abort listener behind after a sleep that ended', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const stop = new AbortController();
    let added = 0;
    let removed = 0;
    const signal = stop.signal;
    const add = signal.addEventListener.bind(signal);
    const remove = signal.removeEventListener.bind(signal);
    signal.addEventListener = ((...args: Parameters<typeof add>) => (added++, add(...args))) as typeof add;
    signal.removeEventListener = ((...args: Parameters<typeof remove>) => (removed++, remove(...args))) as typeof remove;
    for (let i = 0; i < 3; i++) {
      const sleeping = waiter.sleep(100, signal);
      if (i === 1) waiter.wake();
      else if (i === 2) waiter.shorten(1);
      clock.advance(100);
      await sleeping;
    }
    assert.is(added, 3);
    assert.is(removed, 3);
  });

  it('aborts a later sleep on the same signal after an earlier one was woken', async () => {
    const clock = new FakeClock();
    const waiter = new Waiter(1, clock);
    const stop = new AbortController();
    const first = waiter.sleep(100, stop.signal);
    waiter.wake();
    await first;
    const second = track(waiter.sleep(100, stop.signal));
    stop.abort(new Error('during the second'));
    await flush();
    assert.instance(second.error, Error);
    assert.is((second.error as Error).message, 'during the second');
  });
});
