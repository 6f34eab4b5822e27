import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { Waiter } from '../../src/runtime/waiter.ts';
import { wakeHead, type WakeRule } from '../../src/runtime/waiting.ts';
import { describe, rejects } from '../helpers/describe.ts';
import { FakeClock, flush } from '../helpers/fake-clock.ts';
import { fakeRoom } from '../helpers/fake-subscriber.ts';

/** A waiter that records what the room does to it. */
class SpyWaiter extends Waiter {
  readonly seen: string[] = [];
  constructor(readonly label: string) {
    super(1, new FakeClock());
  }
  override wake(): void {
    this.seen.push('wake');
  }
  override shorten(ms: number): void {
    this.seen.push(`shorten ${ms}`);
  }
}

const room = () => fakeRoom('client-1');

const woken = (waiters: SpyWaiter[]) => waiters.filter((w) => w.seen.includes('wake')).map((w) => w.label);

describe('WaitingRoom#enter', (it) => {
  it('subscribes for every waiter and queues them in order; only the first is the head', async () => {
    const { subscriber, waiting } = room();
    const [a, b, c] = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    assert.ok(waiting.isEmpty('ch'));
    assert.is(await waiting.enter('ch', a!, wakeHead, 'lock-1'), true);
    assert.is(await waiting.enter('ch', b!, wakeHead, 'lock-1'), false);
    assert.is(await waiting.enter('ch', c!, wakeHead, 'lock-1'), false);
    assert.not.ok(waiting.isEmpty('ch'));
    assert.is(waiting.size, 3);
    assert.is(subscriber.refs.get('ch'), 3, 'one reference per waiter');
  });

  it('keeps one queue per channel, each with its own head', async () => {
    const { waiting } = room();
    assert.is(await waiting.enter('one', new SpyWaiter('a'), wakeHead, 'lock-1'), true);
    assert.is(await waiting.enter('two', new SpyWaiter('b'), wakeHead, 'lock-2'), true);
    assert.is(waiting.size, 2);
  });

  it('leaves nothing queued or subscribed when the subscription fails', async () => {
    const { subscriber, waiting } = room();
    const failure = new Error('no subscription');
    subscriber.failing.set('ch', failure);
    assert.is(await rejects(waiting.enter('ch', new SpyWaiter('a'), wakeHead, 'lock-1')), failure);
    assert.ok(waiting.isEmpty('ch'));
    assert.is(waiting.size, 0);
    assert.is(subscriber.refs.size, 0);
    // The next one starts the room afresh, as its head.
    assert.is(await waiting.enter('ch', new SpyWaiter('b'), wakeHead, 'lock-1'), true);
  });

  it('queues a waiter only once its subscription is confirmed', async () => {
    const { waiting } = room();
    const entering = waiting.enter('ch', new SpyWaiter('a'), wakeHead, 'lock-1');
    assert.ok(waiting.isEmpty('ch'), 'nothing queued before SUBSCRIBE answered');
    await entering;
    assert.not.ok(waiting.isEmpty('ch'));
  });
});

describe('WaitingRoom#message', (it) => {
  it('wakes the head of the queue only, with wakeHead', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'lock-1');
    waiting.message('ch', 'release');
    assert.equal(woken(waiters), ['a']);
  });

  it("hands the channel's queue and the message to the room's rule", async () => {
    const { waiting } = room();
    const seen: [string[], string][] = [];
    const rule: WakeRule = (queue, message) => {
      seen.push([queue.map((w) => (w as SpyWaiter).label), message]);
      for (const waiter of queue) waiter.wake();
    };
    const waiters = ['a', 'b'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, rule, 'lock-1');
    waiting.message('ch', 'write-release');
    assert.equal(seen, [[['a', 'b'], 'write-release']]);
    assert.equal(woken(waiters), ['a', 'b']);
  });

  it('ignores a message on a channel nobody waits on', async () => {
    const { waiting } = room();
    const a = new SpyWaiter('a');
    let called = 0;
    await waiting.enter('ch', a, () => void called++, 'lock-1');
    waiting.message('other', 'release');
    assert.is(called, 0);
    waiting.leave('ch', a);
    waiting.message('ch', 'release');
    assert.is(called, 0, 'the room is gone with its last waiter');
  });

  it("publishes relock:wake with the client's id and the lock's name, when someone listens", async () => {
    const { waiting } = room();
    await waiting.enter('ch', new SpyWaiter('a'), wakeHead, 'order:1');
    const messages: unknown[] = [];
    const listener = (message: unknown) => messages.push(message);
    subscribe('relock:wake', listener);
    try {
      waiting.message('ch', 'release');
      waiting.message('unknown', 'release');
    } finally {
      unsubscribe('relock:wake', listener);
    }
    assert.equal(messages, [{ clientId: 'client-1', name: 'order:1' }]);
  });
});

describe('WaitingRoom#leave', (it) => {
  it('drops the waiter and its subscription reference; the last one empties the room', async () => {
    const { subscriber, waiting } = room();
    const [a, b] = ['a', 'b'].map((label) => new SpyWaiter(label));
    await waiting.enter('ch', a!, wakeHead, 'lock-1');
    await waiting.enter('ch', b!, wakeHead, 'lock-1');
    waiting.leave('ch', b!);
    assert.is(subscriber.refs.get('ch'), 1);
    assert.is(waiting.size, 1);
    waiting.leave('ch', a!);
    assert.is(subscriber.refs.has('ch'), false);
    assert.ok(waiting.isEmpty('ch'));
    assert.is(waiting.size, 0);
  });

  it('changes nothing for a waiter that is not queued (left already, or never entered)', async () => {
    const { subscriber, waiting } = room();
    const [a, b] = ['a', 'b'].map((label) => new SpyWaiter(label));
    await waiting.enter('ch', a!, wakeHead, 'lock-1');
    waiting.leave('ch', b!);
    waiting.leave('other', a!);
    assert.is(subscriber.refs.get('ch'), 1, 'no reference dropped for a stranger');
    waiting.leave('ch', a!);
    waiting.leave('ch', a!);
    assert.equal(subscriber.calls, ['subscribe ch', 'unsubscribe ch']);
  });

  it('wakes the next head when the head leaves without the lock (it may have swallowed a wake-up)', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'lock-1');
    waiting.leave('ch', waiters[0]!);
    assert.equal(woken(waiters), ['b']);
  });

  it("bounds the next head's sleep by the lease when the head leaves with the lock", async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'lock-1');
    waiting.leave('ch', waiters[0]!, 300);
    assert.equal(
      waiters.map((w) => w.seen),
      [[], ['shorten 300'], []],
    );
  });

  it('hands the wake-ups a waiter got while attempting on to the next waiters when it leaves with the permits (a semaphore)', async () => {
    const { waiting } = room();
    const clock = new FakeClock();
    const [a, b, c, d] = [1, 1, 1, 1].map((need) => new Waiter(need, clock, true));
    for (const waiter of [a, b, c, d]) await waiting.enter('ch', waiter!, wakeHead, 'sem-1');
    const stop = new AbortController();
    const sleeps = [b, c, d].map((waiter) => {
      const outcome = { woken: false };
      void waiter!.sleep(10_000, stop.signal).then(() => (outcome.woken = true), () => undefined);
      return outcome;
    });
    // `a` was woken and attempts; two more releases come before its reply, and it got in.
    waiting.message('ch', '1');
    waiting.message('ch', '1');
    waiting.leave('ch', a!, 300);
    await flush();
    assert.equal(
      sleeps.map((outcome) => outcome.woken),
      [true, true, false],
      'one waiter woken for each wake-up it did not use',
    );
    stop.abort();
  });

  it('wakes nobody when a waiter behind the head leaves', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'lock-1');
    waiting.leave('ch', waiters[1]!);
    waiting.leave('ch', waiters[2]!, 300);
    assert.equal(
      waiters.map((w) => w.seen),
      [[], [], []],
    );
    waiting.message('ch', 'release');
    assert.equal(woken(waiters), ['a'], 'the head is still the head');
  });

  it('makes the next waiter the head for the following message', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'lock-1');
    waiting.leave('ch', waiters[0]!, 1_000);
    waiting.message('ch', 'release');
    assert.equal(woken(waiters), ['b']);
  });
  it('hands nothing on in a room opened with handsOn false: only the rule and a resubscription wake', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    for (const waiter of waiters) await waiting.enter('ch', waiter, wakeHead, 'fair-1', { handsOn: false });
    waiting.leave('ch', waiters[0]!);
    waiting.leave('ch', waiters[1]!, 300);
    assert.equal(
      waiters.map((w) => w.seen),
      [[], [], []],
    );
    waiting.message('ch', 'grant');
    assert.equal(woken(waiters), ['c']);
  });

  it("keeps the options of the waiter that opened the room", async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    await waiting.enter('ch', waiters[0]!, wakeHead, 'lock-1');
    await waiting.enter('ch', waiters[1]!, wakeHead, 'lock-1', { handsOn: false });
    await waiting.enter('ch', waiters[2]!, wakeHead, 'lock-1', { handsOn: false });
    waiting.leave('ch', waiters[0]!);
    assert.equal(woken(waiters), ['b'], 'the room hands on, as its opener asked');
  });
});

describe('WaitingRoom#resubscribed', (it) => {
  it('wakes every waiter of every channel: what was published meanwhile is lost', async () => {
    const { waiting } = room();
    const waiters = ['a', 'b', 'c'].map((label) => new SpyWaiter(label));
    await waiting.enter('one', waiters[0]!, wakeHead, 'lock-1');
    await waiting.enter('one', waiters[1]!, wakeHead, 'lock-1');
    await waiting.enter('two', waiters[2]!, wakeHead, 'lock-2');
    waiting.resubscribed();
    assert.equal(woken(waiters), ['a', 'b', 'c']);
  });
});

describe('WaitingRoom with real waiters', (it) => {
  it('ends the sleep of the head on a message and leaves the others asleep', async () => {
    const clock = new FakeClock();
    const { waiting } = room();
    const [a, b] = [new Waiter(1, clock), new Waiter(1, clock)];
    await waiting.enter('ch', a, wakeHead, 'lock-1');
    await waiting.enter('ch', b, wakeHead, 'lock-1');
    const stop = new AbortController();
    let aWoke = false;
    let bWoke = false;
    void a.sleep(30_000, stop.signal).then(() => (aWoke = true));
    void b.sleep(30_000, stop.signal).then(() => (bWoke = true), () => undefined);
    waiting.message('ch', 'release');
    await flush();
    assert.ok(aWoke);
    assert.not.ok(bWoke);
    // The head takes the lock and leaves with a 300 ms lease: the next sleeps at most that long.
    waiting.leave('ch', a, 300);
    clock.advance(300);
    await flush();
    assert.ok(bWoke);
    stop.abort();
  });

  it('keeps a wake-up for a head that was attempting when the message came', async () => {
    const clock = new FakeClock();
    const { waiting } = room();
    const a = new Waiter(1, clock);
    await waiting.enter('ch', a, wakeHead, 'lock-1');
    waiting.message('ch', 'release'); // a is between attempts, not asleep
    let woke = false;
    void a.sleep(30_000, new AbortController().signal).then(() => (woke = true));
    await flush();
    assert.ok(woke);
  });
});
