import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockError, LockLostError } from '../../src/errors.ts';
import { marginMs, type Renewable, type Renewer } from '../../src/runtime/renewable.ts';
import { Watchdog } from '../../src/runtime/watchdog.ts';
import { describe, within } from '../helpers/describe.ts';
import { FakeClock, flush } from '../helpers/fake-clock.ts';

interface Call {
  readonly names: string[];
  readonly leaseMs: number;
  readonly sentAt: number;
  resolve(flags: boolean[]): void;
  reject(error: Error): void;
}

/** A renewer whose calls the test answers (or leaves hanging, as an unreachable Redis would). */
class FakeRenewer implements Renewer {
  readonly calls: Call[] = [];
  constructor(
    readonly batch: number,
    readonly clock: FakeClock,
  ) {}
  renew(batch: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return new Promise((resolve, reject) =>
      this.calls.push({ names: batch.map((hold) => hold.name), leaseMs, sentAt: this.clock.now(), resolve, reject }),
    );
  }
  /** Answers every unanswered call with true for every hold. */
  answerAll(): void {
    for (const call of this.calls.splice(0)) call.resolve(call.names.map(() => true));
  }
}

/** A hold as a primitive keeps it (the watchdog only reads it): writable here, as hold.ts writes its own. */
interface TestHold extends Renewable {
  held: boolean;
  acquiredAt: number;
  readonly losses: LockLostError[];
}

function makeHold(name: string, renewer: Renewer, options: { renewable?: boolean; key?: string; renewLeaseMs?: number } = {}): TestHold {
  const losses: LockLostError[] = [];
  const hold: TestHold = {
    ...(options.renewLeaseMs === undefined ? {} : { renewLeaseMs: options.renewLeaseMs }),
    name,
    key: options.key ?? `relock:{${name}}`,
    owner: `client-1:${name}`,
    renewer,
    renewable: options.renewable ?? true,
    held: false,
    acquiredAt: Number.POSITIVE_INFINITY,
    losses,
    lose: (error) => {
      hold.held = false;
      losses.push(error);
    },
  };
  return hold;
}

/** What a primitive does around its acquire script: register renewal before sending, then the lease from the send time. */
function acquireHold(watchdog: Watchdog, hold: TestHold, sentAt: number, leaseMs: number): void {
  if (hold.renewable) watchdog.add(hold);
  hold.held = true;
  hold.acquiredAt = sentAt;
  watchdog.leaseFrom(hold, sentAt, leaseMs);
}

function setup(leaseMs = 300) {
  const clock = new FakeClock(1_000);
  const errors: Error[] = [];
  const watchdog = new Watchdog({ leaseMs, clientId: 'client-1', onError: (error) => void errors.push(error), clock });
  return { clock, errors, watchdog };
}

describe('marginMs', (it) => {
  it('is a tenth of the lease, at least 3 ms and at most a second', () => {
    assert.is(marginMs(300), 30);
    assert.is(marginMs(5), 3);
    assert.is(marginMs(35), 3);
    assert.is(marginMs(30_000), 1_000);
    assert.is(marginMs(60_000), 1_000);
  });
});

describe('Watchdog renewal', (it) => {
  it('renews every leaseMs / 3 with the client lease, and moves the deadline to sentAt + lease - margin', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    assert.is(watchdog.deadlineOf(hold), 1_000 + 300 - 30);
    await clock.advanceAsync(99);
    assert.is(renewer.calls.length, 0);
    await clock.advanceAsync(1);
    assert.equal(
      renewer.calls.map((call) => [call.names, call.leaseMs, call.sentAt]),
      [[['a'], 300, 1_100]],
    );
    renewer.answerAll();
    await flush();
    assert.is(watchdog.deadlineOf(hold), 1_100 + 300 - 30);
    for (const at of [1_200, 1_300, 1_400]) {
      await clock.advanceAsync(100);
      assert.equal(renewer.calls.map((call) => call.sentAt), [at]);
      renewer.answerAll();
      await flush();
      assert.is(watchdog.deadlineOf(hold), at + 270);
    }
    assert.is(hold.losses.length, 0);
  });

  it('keeps a hold alive through many periods when every renewal answers', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    for (let i = 0; i < 100; i++) {
      await clock.advanceAsync(50);
      renewer.answerAll();
      await flush();
    }
    assert.is(hold.losses.length, 0);
    assert.ok(hold.held);
  });

  it('renews a hold with its own lease (a leader\'s) every third of it, beside the client lease, in separate calls', async () => {
    const { clock, watchdog } = setup(3_000);
    const renewer = new FakeRenewer(500, clock);
    const plain = makeHold('plain', renewer);
    const own = makeHold('own', renewer, { renewLeaseMs: 300 });
    acquireHold(watchdog, plain, clock.now(), 3_000);
    acquireHold(watchdog, own, clock.now(), 300);
    assert.is(watchdog.deadlineOf(own), 1_000 + 300 - 30);
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => [call.names, call.leaseMs]),
      [
        [['plain'], 3_000],
        [['own'], 300],
      ],
      'a period of a third of the shortest lease; one call per lease',
    );
    renewer.answerAll();
    await flush();
    assert.is(watchdog.deadlineOf(own), 1_100 + 300 - 30, 'its own lease from the send');
    assert.is(watchdog.deadlineOf(plain), 1_100 + 3_000 - 300);
    for (let i = 0; i < 20; i++) {
      await clock.advanceAsync(100);
      renewer.answerAll();
      await flush();
    }
    assert.is(own.losses.length + plain.losses.length, 0);
    // Unanswered from now on: the own-lease hold is lost at its own deadline, the other is not yet.
    const sentAt = clock.now();
    await clock.advanceAsync(300);
    assert.is(own.losses.length, 1, 'lost within its own lease');
    assert.is(plain.losses.length, 0);
    assert.ok(watchdog.deadlineOf(plain) > sentAt + 2_000);
  });

  it("cuts the holds into batches of the renewer's size", async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(2, clock);
    const holds = ['a', 'b', 'c', 'd', 'e'].map((name) => makeHold(name, renewer));
    for (const hold of holds) acquireHold(watchdog, hold, clock.now(), 300);
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['a', 'b'], ['c', 'd'], ['e']],
    );
  });

  it('groups holds by renewer: one call per renewer, each with only its own holds', async () => {
    const { clock, watchdog } = setup(300);
    const locks = new FakeRenewer(500, clock);
    const semaphores = new FakeRenewer(500, clock);
    acquireHold(watchdog, makeHold('lock-1', locks), clock.now(), 300);
    acquireHold(watchdog, makeHold('sem-1', semaphores), clock.now(), 300);
    acquireHold(watchdog, makeHold('lock-2', locks), clock.now(), 300);
    await clock.advanceAsync(100);
    assert.equal(
      locks.calls.map((call) => call.names),
      [['lock-1', 'lock-2']],
    );
    assert.equal(
      semaphores.calls.map((call) => call.names),
      [['sem-1']],
    );
  });

  it('starts a renewal period with the first renewable hold after none', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const first = makeHold('a', renewer);
    acquireHold(watchdog, first, clock.now(), 300);
    await clock.advanceAsync(50);
    watchdog.delete(first);
    await clock.advanceAsync(450); // t = 1500
    const second = makeHold('b', renewer);
    acquireHold(watchdog, second, clock.now(), 300);
    await clock.advanceAsync(99);
    assert.is(renewer.calls.length, 0, 'nothing renewed before a third of its lease');
    await clock.advanceAsync(1);
    assert.equal(
      renewer.calls.map((call) => [call.names, call.sentAt]),
      [[['b'], 1_600]],
    );
  });

  it('renews a hold registered before its acquire was answered, and loses nothing it does not hold yet', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    watchdog.add(hold); // the acquire is out
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['a']],
    );
    renewer.calls[0]!.resolve([false]); // the acquire has not run yet on Redis
    await flush();
    assert.is(hold.losses.length, 0, 'not held: no loss');
  });

  it('loses nothing by a renewal sent before the acquire went through, even when the acquire goes through before its answer', async () => {
    // A Redlock acquire is decided by a majority: the renewal sent while it was out (which a master
    // may have seen before the acquire) can be answered after the decision.
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    watchdog.add(hold); // the acquire is out
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['a']],
    );
    acquireHold(watchdog, hold, 1_050, 300); // the majority decided: held
    renewer.calls[0]!.resolve([false]);
    await flush();
    assert.is(hold.losses.length, 0, 'the renewal told nothing of the hold it became');
    await clock.advanceAsync(100);
    renewer.calls[1]!.resolve([false]); // sent while held: this one is a loss
    await flush();
    assert.is(hold.losses.length, 1);
  });

  it('sends one renewal at a time: a period while one hangs sends nothing more', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    acquireHold(watchdog, makeHold('a', renewer), clock.now(), 300);
    await clock.advanceAsync(100);
    await clock.advanceAsync(100);
    assert.is(renewer.calls.length, 1);
    renewer.answerAll();
    await flush();
    await clock.advanceAsync(100);
    assert.is(renewer.calls.length, 1, 'the next period sends again');
  });

  it('publishes relock:renew with the names a batch renewed', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    for (const name of ['a', 'b']) acquireHold(watchdog, makeHold(name, renewer), clock.now(), 300);
    const messages: unknown[] = [];
    const listener = (message: unknown) => messages.push(message);
    subscribe('relock:renew', listener);
    try {
      await clock.advanceAsync(100);
      renewer.calls[0]!.resolve([true, false]);
      await flush();
    } finally {
      unsubscribe('relock:renew', listener);
    }
    assert.equal(messages, [{ clientId: 'client-1', names: ['a'] }]);
  });
});

describe('Watchdog loss', (it) => {
  it('loses a hold whose renewal reports it gone, and keeps renewing the others', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const [a, b] = ['a', 'b'].map((name) => makeHold(name, renewer));
    acquireHold(watchdog, a!, clock.now(), 300);
    acquireHold(watchdog, b!, clock.now(), 300);
    await clock.advanceAsync(100);
    renewer.calls.splice(0)[0]!.resolve([false, true]);
    await flush();
    assert.is(a!.losses.length, 1);
    assert.instance(a!.losses[0], LockLostError);
    assert.match(a!.losses[0]!.message, /expired or was force-unlocked/);
    assert.is(a!.losses[0]!.lockName, 'a');
    assert.not.ok(a!.held);
    assert.is(b!.losses.length, 0);
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['b']],
      'the lost hold is no longer renewed',
    );
  });

  it('loses a hold at its deadline when renewals hang, not a millisecond before', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300); // deadline 1270
    await clock.advanceAsync(269);
    assert.is(renewer.calls.length, 1, 'the renewal at 1100 hangs');
    assert.is(hold.losses.length, 0);
    await clock.advanceAsync(1);
    assert.is(hold.losses.length, 1);
    assert.match(hold.losses[0]!.message, /could not be renewed before its lease ended/);
    assert.not.ok(hold.held);
    // The hanging renewal answers late: the hold stays lost.
    renewer.answerAll();
    await flush();
    assert.is(hold.losses.length, 1);
    assert.is(watchdog.deadlineOf(hold), 1_270, 'a late answer does not revive the deadline');
  });

  it('loses a hold earlier by its loop\'s recent lateness (at most the margin): on a late loop the signal still comes before Redis ends the lease', async () => {
    const { clock, watchdog } = setup(600);
    clock.lateMs = 100; // every timer fires 100 ms late, as on a busy machine
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 600); // ends on Redis at 1600; deadline 1540, margin 60
    let lostAt = Number.NaN;
    const lose = hold.lose;
    hold.lose = (error) => {
      lostAt = clock.now();
      lose(error);
    };
    await clock.advanceAsync(700); // the renewals hang
    assert.ok(renewer.calls.length >= 1, 'renewals were sent');
    assert.is(hold.losses.length, 1);
    assert.ok(lostAt < 1_600, `lost at ${lostAt}, before the lease ends on Redis at 1600`);
    assert.ok(lostAt >= 1_540 - 60, `not earlier than the deadline less the margin (${lostAt})`);
  });

  it('loses a hold at its deadline when every renewal fails, and reports the failures', async () => {
    const { clock, watchdog, errors } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    for (let i = 0; i < 2; i++) {
      await clock.advanceAsync(100);
      renewer.calls.splice(0)[0]!.reject(new Error('connection refused'));
      await flush();
    }
    assert.is(errors.length, 2);
    assert.is(errors[0]!.message, 'connection refused');
    assert.is(hold.losses.length, 0);
    await clock.advanceAsync(70); // 1270
    assert.is(hold.losses.length, 1);
  });

  it('counts the new lease from when the renewal was sent, not from when it was answered', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    await clock.advanceAsync(100); // sent at 1100
    await clock.advanceAsync(150); // answered at 1250
    renewer.answerAll();
    await flush();
    assert.is(watchdog.deadlineOf(hold), 1_100 + 270);
  });

  it('ends a fixed lease at sentAt + lease - margin without renewing it', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('fixed', renewer, { renewable: false });
    acquireHold(watchdog, hold, clock.now() - 10, 100); // sent 10 ms ago: deadline 990 + 100 - 10
    assert.is(watchdog.deadlineOf(hold), 1_080);
    await clock.advanceAsync(79);
    assert.is(hold.losses.length, 0);
    await clock.advanceAsync(1);
    assert.is(hold.losses.length, 1);
    assert.match(hold.losses[0]!.message, /reached the end of its lease/);
    assert.is(renewer.calls.length, 0, 'a fixed lease is never renewed');
  });

  it('lengthens a fixed lease for a longer nested one, and never shortens it', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('fixed', renewer, { renewable: false });
    acquireHold(watchdog, hold, clock.now(), 1_000); // deadline 1900
    watchdog.lengthen(hold, clock.now() + 100, 200); // would end at 1280
    assert.is(watchdog.deadlineOf(hold), 1_900);
    watchdog.lengthen(hold, clock.now() + 100, 2_000); // 3100 - 200
    assert.is(watchdog.deadlineOf(hold), 2_900);
    await clock.advanceAsync(1_899);
    assert.is(hold.losses.length, 0);
    await clock.advanceAsync(1);
    assert.is(hold.losses.length, 1);
  });

  it('fires each deadline at its own time whatever order the holds came in', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const late = makeHold('late', renewer, { renewable: false });
    const early = makeHold('early', renewer, { renewable: false });
    acquireHold(watchdog, late, clock.now(), 1_000);
    acquireHold(watchdog, early, clock.now(), 100);
    await clock.advanceAsync(90);
    assert.equal([early.losses.length, late.losses.length], [1, 0]);
    await clock.advanceAsync(810);
    assert.equal([early.losses.length, late.losses.length], [1, 1]);
  });
});

describe('Watchdog bookkeeping', (it) => {
  it('stopRenewing keeps the deadline: the hold then ends as a fixed lease would', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    watchdog.stopRenewing(hold);
    await clock.advanceAsync(269);
    assert.is(renewer.calls.length, 0);
    await clock.advanceAsync(1);
    assert.is(hold.losses.length, 1);
  });

  it('never applies a renewal in flight to a hold whose renewal was stopped (its release is being sent)', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    assert.is(watchdog.inFlight, undefined);
    await clock.advanceAsync(100);
    assert.instance(watchdog.inFlight, Promise, 'the renewal is out');
    watchdog.stopRenewing(hold);
    let settled = false;
    const settling = watchdog.inFlight!.then(() => (settled = true));
    await flush();
    assert.not.ok(settled, 'inFlight settles only with the renewal in flight');
    renewer.calls[0]!.resolve([false]); // it ran after the release: the hold is gone
    await settling;
    assert.is(hold.losses.length, 0, 'a release is not a loss');
    assert.is(watchdog.deadlineOf(hold), 1_270, 'nor does a late renewal lengthen it');
    await flush();
    assert.is(watchdog.inFlight, undefined);
  });

  it('delete stops renewing and stops the deadline', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    watchdog.delete(hold);
    await clock.advanceAsync(1_000);
    assert.is(renewer.calls.length, 0);
    assert.is(hold.losses.length, 0);
  });

  it('loseKey loses every held hold on that key, and no other', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const one = makeHold('one', renewer, { key: 'k' });
    const two = makeHold('two', renewer, { key: 'k' });
    const pending = makeHold('pending', renewer, { key: 'k' });
    const other = makeHold('other', renewer, { key: 'k2' });
    for (const hold of [one, two, other]) acquireHold(watchdog, hold, clock.now(), 300);
    watchdog.add(pending); // its acquire is still out
    const error = new LockLostError('force-unlocked');
    watchdog.loseKey('k', error);
    assert.equal(one.losses, [error]);
    assert.equal(two.losses, [error]);
    assert.is(pending.losses.length, 0, 'not held yet');
    assert.is(other.losses.length, 0);
    await clock.advanceAsync(100);
    assert.equal(
      renewer.calls.map((call) => [...call.names].sort()),
      [['other', 'pending']],
    );
  });

  it('heldSince answers whether a hold on the key was held without a break since then', () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer, { key: 'k' });
    assert.not.ok(watchdog.heldSince('k', 1_000));
    acquireHold(watchdog, hold, 900, 300);
    assert.ok(watchdog.heldSince('k', 900));
    assert.ok(watchdog.heldSince('k', 1_000));
    assert.not.ok(watchdog.heldSince('k', 899), 'taken after that moment');
    assert.not.ok(watchdog.heldSince('other', 1_000));
    watchdog.lose(hold, new LockLostError('gone'));
    assert.not.ok(watchdog.heldSince('k', 1_000), 'lost');
  });

  it('lose marks the hold not held, stops watching it and tells the hold', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    const error = new LockLostError('gone');
    watchdog.lose(hold, error);
    assert.not.ok(hold.held);
    assert.equal(hold.losses, [error]);
    await clock.advanceAsync(1_000);
    assert.is(renewer.calls.length, 0);
    assert.is(hold.losses.length, 1);
  });

  it('exposes the clock it runs on', () => {
    const { clock, watchdog } = setup(300);
    assert.is(watchdog.clock, clock);
  });
});

describe('Watchdog per batch', (it) => {
  it("keeps renewing the other batches while one batch's call hangs, and sends that batch nothing more meanwhile", async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(1, clock);
    const [silent, a, b] = ['silent', 'a', 'b'].map((name) => makeHold(name, renewer));
    for (const hold of [silent!, a!, b!]) acquireHold(watchdog, hold, clock.now(), 300); // deadlines 1270
    /** Answers every call but the silent hold's, which stays out. */
    const answerAllBut = () => {
      for (const call of renewer.calls.splice(0)) if (call.names[0] !== 'silent') call.resolve([true]);
    };
    await clock.advanceAsync(100); // 1100: one call per hold
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['silent'], ['a'], ['b']],
    );
    answerAllBut();
    await flush();
    assert.equal([watchdog.deadlineOf(a!), watchdog.deadlineOf(b!)], [1_370, 1_370]);
    await clock.advanceAsync(100); // 1200: the silent hold's call is still out
    assert.equal(
      renewer.calls.map((call) => call.names),
      [['a'], ['b']],
      'the batch whose call is out is not sent again',
    );
    answerAllBut();
    await flush();
    assert.equal([watchdog.deadlineOf(a!), watchdog.deadlineOf(b!)], [1_470, 1_470]);
    for (let i = 0; i < 5; i++) {
      await clock.advanceAsync(100);
      answerAllBut();
      await flush();
    }
    assert.equal([a!.losses.length, b!.losses.length], [0, 0], 'the holds of the other batches are kept');
    assert.is(silent!.losses.length, 1, 'the silent batch is lost at its deadline');
    assert.match(silent!.losses[0]!.message, /could not be renewed before its lease ended/);
  });

  it('counts a call unanswered at half the lease as not renewed: reports ERR_LOCK_UNREACHABLE and sends its holds again the round after', async () => {
    const { clock, watchdog, errors } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    await clock.advanceAsync(100); // sent at 1100, bound at 1250
    await clock.advanceAsync(149);
    assert.is(errors.length, 0);
    assert.instance(watchdog.renewalOf(hold), Promise, 'still out before its bound');
    await clock.advanceAsync(1);
    assert.is(errors.length, 1);
    assert.instance(errors[0], LockError);
    assert.is((errors[0] as LockError).code, 'ERR_LOCK_UNREACHABLE');
    assert.is((errors[0] as LockError).lockName, 'a');
    assert.match(errors[0]!.message, /no answer to the renewal of hold "a" within 150 ms/);
    assert.is(watchdog.renewalOf(hold), undefined, 'past its bound, nothing is waited for');
    assert.is(watchdog.inFlight, undefined);
    assert.is(hold.losses.length, 0, 'not renewed is no loss before the deadline');
    // The first call was not answered before the deadline (1270): the hold is lost then, as before.
    await clock.advanceAsync(20);
    assert.is(hold.losses.length, 1);
    // A call that fails after its bound is not reported twice.
    renewer.calls[0]!.reject(new Error('Command timed out'));
    await flush();
    assert.is(errors.length, 1);
  });

  it('sends a batch again in the round after its bound, and a late answer still renews without moving a deadline back', async () => {
    const { clock, watchdog } = setup(3_000); // rounds every 1000 from the first hold, bound 1500, margin 300
    const renewer = new FakeRenewer(500, clock);
    const early = makeHold('early', renewer);
    const late = makeHold('late', renewer);
    acquireHold(watchdog, early, clock.now(), 3_000); // deadline 3700
    await clock.advanceAsync(990);
    acquireHold(watchdog, late, clock.now(), 3_000); // at 1990: deadline 4690
    await clock.advanceAsync(10); // 2000: one call for both, which hangs
    await clock.advanceAsync(1_000); // 3000: still out, nothing sent
    assert.equal(
      renewer.calls.map((call) => [call.names, call.sentAt]),
      [[['early', 'late'], 2_000]],
    );
    await clock.advanceAsync(1_000); // 3500 past its bound, 3700 early's deadline; 4000: sent again
    assert.equal([early.losses.length, late.losses.length], [1, 0]);
    assert.equal(
      renewer.calls.map((call) => [call.names, call.sentAt]),
      [
        [['early', 'late'], 2_000],
        [['late'], 4_000],
      ],
    );
    renewer.calls[1]!.resolve([true]);
    await flush();
    assert.is(watchdog.deadlineOf(late), 4_000 + 2_700);
    renewer.calls[0]!.resolve([true, true]); // the call sent at 2000 answers at last
    await flush();
    assert.is(watchdog.deadlineOf(late), 4_000 + 2_700, 'a late answer never moves the deadline earlier');
    assert.is(early.losses.length, 1, 'nor revives a lost hold');
    assert.is(late.losses.length, 0);
  });

  it("lets a hold's release wait for its own batch's call only", async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(1, clock);
    const [a, b] = ['a', 'b'].map((name) => makeHold(name, renewer));
    acquireHold(watchdog, a!, clock.now(), 300);
    acquireHold(watchdog, b!, clock.now(), 300);
    await clock.advanceAsync(100);
    const [callA, callB] = renewer.calls;
    let aSettled = false;
    void watchdog.renewalOf(a!)!.then(() => (aSettled = true));
    callB!.resolve([true]);
    await flush();
    assert.is(watchdog.renewalOf(b!), undefined, "b's call answered: b's release goes at once");
    assert.not.ok(aSettled, "a's call is still out");
    assert.instance(watchdog.inFlight, Promise);
    callA!.resolve([true]);
    await flush();
    assert.ok(aSettled);
    assert.is(watchdog.renewalOf(a!), undefined);
  });
});

describe('Watchdog#stop', (it) => {
  it('loses every held hold with the error given, disarms its timer and ignores later holds', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const held = makeHold('held', renewer);
    const pending = makeHold('pending', renewer);
    acquireHold(watchdog, held, clock.now(), 300);
    watchdog.add(pending);
    const error = new LockLostError('closed');
    watchdog.stop(error);
    assert.ok(watchdog.stopped);
    assert.equal(held.losses, [error]);
    assert.is(pending.losses.length, 0);
    assert.is(clock.pending, 0, 'no timer left');
    const late = makeHold('late', renewer);
    acquireHold(watchdog, late, clock.now(), 300);
    assert.is(clock.pending, 0, 'a hold added after stop() arms nothing');
    await clock.advanceAsync(1_000);
    assert.is(renewer.calls.length, 0);
    assert.is(late.losses.length, 0);
  });

  it('lets a renewal in flight at stop() land without reviving anything', async () => {
    const { clock, watchdog } = setup(300);
    const renewer = new FakeRenewer(500, clock);
    const hold = makeHold('a', renewer);
    acquireHold(watchdog, hold, clock.now(), 300);
    await clock.advanceAsync(100);
    watchdog.stop(new LockLostError('closed'));
    renewer.answerAll();
    await watchdog.inFlight;
    assert.is(hold.losses.length, 1);
    assert.not.ok(hold.held);
    assert.is(clock.pending, 0, 'the landing renewal arms no timer');
  });
});

describe('Watchdog#stop per batch', (it) => {
  it('settles every call out at stop(), disarming their bounds: nothing is waited for and no timer is left', async () => {
    const { clock, watchdog, errors } = setup(300);
    const renewer = new FakeRenewer(1, clock);
    const holds = ['a', 'b'].map((name) => makeHold(name, renewer));
    for (const hold of holds) acquireHold(watchdog, hold, clock.now(), 300);
    await clock.advanceAsync(100);
    const waits = holds.map((hold) => watchdog.renewalOf(hold));
    assert.is(waits.filter(Boolean).length, 2);
    watchdog.stop(new LockLostError('closed'));
    await within(Promise.all(waits), 1_000, 'the calls out settled at stop()');
    assert.is(watchdog.inFlight, undefined);
    assert.is(clock.pending, 0, 'no bound timer left');
    await clock.advanceAsync(1_000);
    assert.is(errors.length, 0, 'no bound fires after stop()');
  });
});
