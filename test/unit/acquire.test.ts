import * as assert from 'uvu/assert';
import { LockError, LockTimeoutError } from '../../src/errors.ts';
import { acquire, type AcquireRequest, type Attempt } from '../../src/runtime/acquire.ts';
import type { Runtime } from '../../src/runtime/runtime.ts';
import { wakeHead } from '../../src/runtime/waiting.ts';
import { wakePermits } from '../../src/semaphore/semaphore.ts';
import { describe, rejects, within } from '../helpers/describe.ts';
import { FakeClock, flush } from '../helpers/fake-clock.ts';
import { fakeRoom } from '../helpers/fake-subscriber.ts';

const CHANNEL = 'relock:{a}:released';

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** The parts of a Runtime the acquire frame uses, over a fake clock and a waiting room in memory. */
function harness() {
  const clock = new FakeClock();
  const { waiting, subscriber } = fakeRoom();
  const closer = new AbortController();
  const runtime = {
    closed: closer.signal,
    pending: new Set<{ abort(reason: unknown): void }>(),
    firstUse() {},
    waiting,
    watchdog: { clock, heldSince: () => false },
    leaseMs: 30_000,
    runner: { ready: true, unreachableCause: () => new Error('down') },
    warnSelfWait() {},
  };
  const attempts: Deferred<Attempt<string>>[] = [];
  const givenBack: string[] = [];
  const request = (overrides: Partial<AcquireRequest<string>> = {}): AcquireRequest<string> => ({
    name: 'a',
    waitMs: Number.POSITIVE_INFINITY,
    signal: undefined,
    channel: CHANNEL,
    rule: wakeHead,
    need: 1,
    key: 'relock:{a}',
    leaseMs: 30_000,
    attempt: () => {
      const next = deferred<Attempt<string>>();
      attempts.push(next);
      return next.promise;
    },
    giveBack: (value) => void givenBack.push(value),
    ...overrides,
  });
  /** Answers the attempt that is out, then lets the frame go on. */
  const answer = async (outcome: Attempt<string>) => {
    attempts.at(-1)!.resolve(outcome);
    await flush();
  };
  return { clock, waiting, subscriber, closer, runtime: runtime as unknown as Runtime, pending: runtime.pending, attempts, givenBack, request, answer };
}

const busy = (retryMs = 30_000): Attempt<string> => ({ kind: 'busy', retryMs });
const acquired = (value = 'lease'): Attempt<string> => ({ kind: 'acquired', value });

describe('acquire frame', (it) => {
  it('returns what the first attempt acquired, without entering the waiting room', async () => {
    const h = harness();
    const result = acquire(h.runtime, h.request());
    await flush();
    await h.answer(acquired('first'));
    assert.is(await result, 'first');
    assert.equal(h.subscriber.calls, []);
    assert.is(h.pending.size, 0);
  });

  it('tries once with waitMs 0: LockTimeoutError, never queued', async () => {
    const h = harness();
    const result = rejects(acquire(h.runtime, h.request({ waitMs: 0 })));
    await flush();
    await h.answer(busy());
    const error = await result;
    assert.instance(error, LockTimeoutError);
    assert.is(error.lockName, 'a');
    assert.is(h.attempts.length, 1);
    assert.equal(h.subscriber.calls, []);
  });

  it('after a busy try, subscribes and tries again at once as the head, then sleeps for the hint', async () => {
    const h = harness();
    const result = acquire(h.runtime, h.request());
    await flush();
    await h.answer(busy(500));
    assert.equal(h.subscriber.calls, [`subscribe ${CHANNEL}`]);
    assert.is(h.attempts.length, 2, 'the head tries after SUBSCRIBE: a release may have slipped in between');
    await h.answer(busy(400));
    h.clock.advance(399);
    await flush();
    assert.is(h.attempts.length, 2, 'asleep until the holder lease could end');
    h.clock.advance(1);
    await flush();
    assert.is(h.attempts.length, 3);
    await h.answer(acquired());
    assert.is(await result, 'lease');
    // The channel lingers (2 s) after the last waiter: the next wait needs no SUBSCRIBE.
    assert.equal(h.subscriber.calls, [`subscribe ${CHANNEL}`]);
    assert.ok(h.waiting.isEmpty(CHANNEL));
    assert.ok(h.waiting.listening(CHANNEL));
  });

  it('on a channel still listened to, a busy try enters without a second attempt, unless a message came in between', async () => {
    const h = harness();
    const first = acquire(h.runtime, h.request());
    await flush();
    await h.answer(busy());
    await h.answer(acquired());
    assert.is(await first, 'lease');
    assert.ok(h.waiting.listening(CHANNEL));

    // Quiet: the release it would have missed cannot have happened unheard.
    const second = acquire(h.runtime, h.request());
    await flush();
    await h.answer(busy(500));
    assert.is(h.attempts.length, 3, 'no second attempt: nothing was published since the first');
    // The lingering reference is handed to the waiter: the count never drops to 0, so the real
    // subscriber sends Redis no SUBSCRIBE or UNSUBSCRIBE.
    assert.equal(h.subscriber.calls, [`subscribe ${CHANNEL}`, `subscribe ${CHANNEL}`, `unsubscribe ${CHANNEL}`]);
    assert.is(h.subscriber.refs.get(CHANNEL), 1);
    h.waiting.message(CHANNEL, 'release');
    await flush();
    assert.is(h.attempts.length, 4, 'woken by the release');
    await h.answer(acquired());
    assert.is(await second, 'lease');

    // A release between the busy reply and entering the room: tried again at once.
    const third = acquire(h.runtime, h.request());
    await flush();
    h.waiting.message(CHANNEL, 'release');
    await h.answer(busy());
    assert.is(h.attempts.length, 6, 'the message since the mark makes it try at once');
    await h.answer(acquired());
    assert.is(await third, 'lease');

    // A reconnect may have lost a message: it counts as one.
    const fourth = acquire(h.runtime, h.request());
    await flush();
    h.waiting.resubscribed();
    await h.answer(busy());
    assert.is(h.attempts.length, 8, 'a resubscription since the mark makes it try at once');
    await h.answer(acquired());
    assert.is(await fourth, 'lease');
  });

  it('tries again when a message on its channel wakes it', async () => {
    const h = harness();
    const result = acquire(h.runtime, h.request());
    await flush();
    await h.answer(busy());
    await h.answer(busy());
    h.waiting.message(CHANNEL, 'release');
    await flush();
    assert.is(h.attempts.length, 3);
    await h.answer(acquired());
    assert.is(await result, 'lease');
  });

  it('does not barge in while a local waiter is queued: it queues behind it first', async () => {
    const h = harness();
    const first = acquire(h.runtime, h.request());
    await flush();
    await h.answer(busy());
    await h.answer(busy()); // the head sleeps
    const second = acquire(h.runtime, h.request());
    await flush();
    assert.is(h.attempts.length, 2, 'the second did not try before queueing');
    assert.is(h.waiting.size, 2);
    h.waiting.message(CHANNEL, 'release'); // wakes the head only
    await flush();
    assert.is(h.attempts.length, 3);
    await h.answer(acquired('head'));
    assert.is(await first, 'head');
    // The head left with the lock: the second's sleep is bounded by that lease.
    h.clock.advance(30_000);
    await flush();
    assert.is(h.attempts.length, 4);
    await h.answer(acquired('second'));
    assert.is(await second, 'second');
  });

  it('hands wake-ups on: a waiter queued behind another after a try of its own tries again at once when a message came since that try', async () => {
    const h = harness();
    const request = () => h.request({ rule: wakePermits, handsOnWakeUps: true });
    const first = acquire(h.runtime, request());
    const second = acquire(h.runtime, request());
    await flush();
    assert.is(h.attempts.length, 2, 'both tried: nobody was queued yet');
    h.attempts[0]!.resolve(busy());
    await flush();
    assert.is(h.attempts.length, 3, 'the first queued, as the head, and tried again');
    h.attempts[2]!.resolve(busy());
    await flush();
    h.waiting.message(CHANNEL, '2'); // two permits free: it wakes the only waiter queued
    await flush();
    assert.is(h.attempts.length, 4);
    h.attempts[1]!.resolve(busy()); // the second's try, refused before that release
    await flush();
    assert.is(h.attempts.length, 5, 'the second tries for the other permit instead of sleeping for a lease');
    h.attempts[3]!.resolve(acquired('first'));
    h.attempts[4]!.resolve(acquired('second'));
    assert.equal(await Promise.all([first, second]), ['first', 'second']);
  });

  it('rejects with signal.reason when aborted while asleep, and leaves the room', async () => {
    const h = harness();
    const stop = new AbortController();
    const result = rejects(acquire(h.runtime, h.request({ signal: stop.signal })));
    await flush();
    await h.answer(busy());
    await h.answer(busy());
    const reason = new Error('gave up');
    stop.abort(reason);
    assert.is(await result, reason);
    await flush();
    assert.ok(h.waiting.isEmpty(CHANNEL));
    assert.is(h.pending.size, 0);
    assert.is(h.attempts.length, 2);
  });

  it('gives back what an attempt that was out when the wait gave up acquired', async () => {
    const h = harness();
    const stop = new AbortController();
    const result = rejects(acquire(h.runtime, h.request({ signal: stop.signal })));
    await flush();
    const reason = new Error('gave up');
    stop.abort(reason);
    assert.is(await result, reason);
    await h.answer(acquired('orphan'));
    assert.equal(h.givenBack, ['orphan']);
  });

  it('sends no attempt after the wait was aborted, even when a wake-up came while an attempt was out', async () => {
    const h = harness();
    const stop = new AbortController();
    const result = rejects(acquire(h.runtime, h.request({ signal: stop.signal })));
    await flush();
    await h.answer(busy()); // queued; the head's try after SUBSCRIBE is out
    assert.is(h.attempts.length, 2);
    h.waiting.message(CHANNEL, 'release'); // arrives while that try is out: kept as a pending wake-up
    const reason = new Error('gave up');
    stop.abort(reason);
    assert.is(await result, reason);
    await h.answer(busy());
    await flush();
    assert.is(h.attempts.length, 2, 'an attempt was sent after the wait had given up');
    assert.ok(h.waiting.isEmpty(CHANNEL));
  });

  it('rejects every pending wait when the runtime closes them, with the reason given', async () => {
    const h = harness();
    const result = rejects(acquire(h.runtime, h.request()));
    await flush();
    await h.answer(busy());
    await h.answer(busy());
    assert.is(h.pending.size, 1);
    const reason = new DOMException('closed', 'AbortError');
    for (const stop of h.pending) stop.abort(reason);
    assert.is(await result, reason);
    assert.is(h.pending.size, 0);
  });

  it('refuses at once, with no attempt, when the runtime is closed or the signal aborted', async () => {
    const h = harness();
    const reason = new Error('aborted before');
    const stop = new AbortController();
    stop.abort(reason);
    assert.is(await rejects(acquire(h.runtime, h.request({ signal: stop.signal }))), reason);
    const closed = new DOMException('closed', 'AbortError');
    h.closer.abort(closed);
    const after = await rejects(acquire(h.runtime, h.request()));
    assert.instance(after, LockError, 'an acquire after close() rejects with a LockError');
    assert.is(after.code, 'ERR_LOCK_CLOSED');
    assert.is(after.cause, closed, "close()'s AbortError is its cause");
    assert.is(h.attempts.length, 0);
  });

  it('fails with ERR_LOCK_LEASE_TOO_SHORT after three late replies in a row', async () => {
    const h = harness();
    let settled = false;
    const result = rejects(acquire(h.runtime, h.request({ leaseMs: 5 }))).finally(() => (settled = true));
    for (let i = 0; i < 6 && !settled; i++) {
      await flush();
      await h.answer({ kind: 'late' });
    }
    const error = await result;
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_LEASE_TOO_SHORT');
    assert.is(h.attempts.length, 3, `${h.attempts.length} late replies before giving up, where the message says 3`);
    assert.match(error.message, '3 times in a row');
  });

  it('rejects with LockTimeoutError after a finite waitMs, and leaves the room', async () => {
    const h = harness();
    const result = rejects(acquire(h.runtime, h.request({ waitMs: 50 })));
    await flush();
    await h.answer(busy());
    await h.answer(busy());
    const error = await within(result, 2_000, 'the timeout');
    assert.instance(error, LockTimeoutError);
    assert.match(error.message, /within 50 ms: it is held/);
    await flush();
    assert.ok(h.waiting.isEmpty(CHANNEL));
  });

  it('rides out an unreachable Redis during a finite wait and names it when the wait ends', async () => {
    const h = harness();
    const result = rejects(acquire(h.runtime, h.request({ waitMs: 50 })));
    await flush();
    h.attempts[0]!.reject(new LockError('Redis could not be reached: ECONNREFUSED', { code: 'ERR_LOCK_UNREACHABLE', cause: new Error('ECONNREFUSED') }));
    await flush();
    const error = await within(result, 2_000, 'the timeout');
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
    assert.match(error.message, /ECONNREFUSED/);
  });

  it('fails fast on an unreachable Redis when the wait is not finite', async () => {
    const h = harness();
    const result = rejects(acquire(h.runtime, h.request()));
    await flush();
    const failure = new LockError('Redis could not be reached', { code: 'ERR_LOCK_UNREACHABLE' });
    h.attempts[0]!.reject(failure);
    assert.is(await result, failure);
  });
});
