// relock's diagnostics channels, seen through the OpenTelemetry-shaped bridge of
// test/helpers/channel-bridge.ts (and through raw subscribers, for the message shapes), against
// a private Redis. The client's lease is 1 s, so its watchdog renews a hold within ~330 ms (a 60 ms
// lease lost holds to a loaded machine's stalls, failing whichever test held one then).
import * as assert from 'uvu/assert';
import { channel, subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { bridge, memorySink, type RecordedSpan } from '../../helpers/channel-bridge.ts';
import type { AcquireTraceContext, Lease, Lock, LockClient, LockKind, LostMessage, RenewMessage, Semaphore, WakeMessage } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { assertClosedBeforeCall } from '../../helpers/closed.ts';

const CHANNELS = ['relock:lost', 'relock:renew', 'relock:wake'] as const;

describe('diagnostics_channel (the OpenTelemetry bridge example)', (it) => {
  const s = setup(it, { leaseMs: 1_000 });
  const sink = memorySink();
  const contexts: AcquireTraceContext[] = [];
  const messages = { 'relock:lost': [] as LostMessage[], 'relock:renew': [] as RenewMessage[], 'relock:wake': [] as WakeMessage[] };
  // Only asyncEnd matters here; @types/node asks for all five handlers.
  const noop = () => undefined;
  const raw = { start: noop, end: noop, asyncStart: noop, error: noop, asyncEnd: (context: unknown) => void contexts.push(context as AcquireTraceContext) };
  const listeners = CHANNELS.map((name) => [name, (message: unknown) => void (messages[name] as unknown[]).push(message)] as const);
  let stop: () => void = () => undefined;

  const unsubscribeAll = () => {
    stop();
    tracingChannel('relock:acquire').unsubscribe(raw);
    for (const [name, listener] of listeners) unsubscribe(name, listener);
  };
  it.before(() => {
    stop = bridge(sink);
    tracingChannel('relock:acquire').subscribe(raw);
    for (const [name, listener] of listeners) subscribe(name, listener);
  });
  it.after(unsubscribeAll);

  /** This suite's spans of one lock, in the order they started. */
  const spansOf = (name: string, span: string): RecordedSpan[] =>
    sink.spans.filter((recorded) => recorded.name === span && recorded.attributes['relock.name'] === name);

  it('traces acquires and releases as spans, with fencingToken and waitedMs set on the context object', async () => {
    const name = uniqueName('diag');
    const lock = s.client.lock(name);
    const before = { acquires: sink.total('relock.acquires'), releases: sink.total('relock.releases') };
    const lease = await lock.acquire();
    const nested = await lease.run(() => lock.acquire());
    await nested.release();
    await lease.release();

    const traced = contexts.filter((context) => context.name === name);
    assert.is(traced.length, 2, 'the first acquisition and the re-entry');
    for (const context of traced) {
      assert.equal({ kind: context.kind, clientId: context.clientId, fencingToken: context.fencingToken }, { kind: 'lock', clientId: s.client.id, fencingToken: lease.fencingToken });
      assert.type(context.waitedMs, 'number');
      assert.ok(context.waitedMs! >= 0);
    }

    const acquires = spansOf(name, 'relock.acquire');
    assert.is(acquires.length, 2);
    for (const span of acquires) {
      assert.is(span.attributes['relock.kind'], 'lock');
      assert.is(span.attributes['relock.client_id'], s.client.id);
      assert.is(span.attributes['relock.fencing_token'], lease.fencingToken);
      assert.type(span.attributes['relock.waited_ms'], 'number');
      assert.is(span.status, undefined);
      assert.ok(span.endTime! >= span.startTime, 'the span ended after it started');
    }
    const releases = spansOf(name, 'relock.release');
    assert.is(releases.length, 2);
    for (const span of releases) {
      assert.is(span.status, undefined);
      assert.ok(span.endTime! >= span.startTime);
    }
    assert.is(sink.total('relock.acquires') - before.acquires, 2);
    assert.is(sink.total('relock.releases') - before.releases, 2);
    assert.ok(sink.points.some((point) => point.name === 'relock.acquire.wait'), 'the wait goes to the histogram');
  });

  it('ends a failed acquire with an error status and the error code as error.type', async () => {
    const name = uniqueName('diag');
    const held = await s.other.lock(name).acquire();
    try {
      assert.is(await s.client.lock(name).tryAcquire(), null);
      const error = await rejects(s.client.lock(name).acquire({ waitMs: 30 }));
      assert.is(error.code, 'ERR_LOCK_TIMEOUT');
    } finally {
      await held.release();
    }
    const failed = spansOf(name, 'relock.acquire').filter((span) => span.attributes['relock.client_id'] === s.client.id);
    assert.is(failed.length, 2, 'tryAcquire() and acquire({ waitMs })');
    for (const span of failed) {
      assert.is(span.attributes['error.type'], 'ERR_LOCK_TIMEOUT');
      assert.is(span.status?.code, 2);
      assert.is(span.attributes['relock.fencing_token'], undefined);
      assert.ok(span.endTime !== undefined);
    }
    assert.ok(sink.points.some((point) => point.name === 'relock.errors' && point.attributes['error.type'] === 'ERR_LOCK_TIMEOUT'));
  });

  it("sets queuedAt, on Redis's clock, on the context of a fair lock's acquire that joined the queue, in the order of the joins", async () => {
    const name = uniqueName('diag');
    const redisMs = async () => {
      const [seconds, micros] = (await s.f.admin.time()) as unknown as [string, string];
      return Number(seconds) * 1000 + Number(micros) / 1000;
    };
    const held = await s.other.fairLock(name).acquire();
    const before = await redisMs();
    const first = s.client.fairLock(name).acquire({ waitMs: 10_000 });
    await eventually(() => s.client.waiting === 1, 'the first acquire waits');
    const third = s.f.client();
    const second = third.fairLock(name).acquire({ waitMs: 10_000 });
    await eventually(async () => (await s.f.admin.llen(`relock:{${name}}:fair:q`)) === 2, 'both joined the queue');
    const after = await redisMs();
    await held.release();
    const leases: Lease[] = [];
    for (const waiting of [first, second]) {
      leases.push(await waiting);
      await leases.at(-1)!.release();
    }
    const traced = contexts.filter((context) => context.name === name);
    assert.is(traced.length, 3, 'the holder and the two waiters');
    // The holder took a free lock with nobody queued: no join.
    assert.is(traced.find((context) => context.fencingToken === held.fencingToken)?.queuedAt, undefined);
    const [one, two] = [traced.find((c) => c.clientId === s.client.id)!, traced.find((c) => c.clientId === third.id)!];
    assert.ok(one.queuedAt! >= Math.floor(before) && one.queuedAt! <= after, `${one.queuedAt} in [${before}, ${after}]`);
    assert.ok(two.queuedAt! >= one.queuedAt! && two.queuedAt! <= after, `${two.queuedAt} after ${one.queuedAt}`);
    assert.ok(one.fencingToken! < two.fencingToken!, 'served in the order of the joins');
    // The lock() of another kind never joins a queue.
    assert.not.ok(contexts.some((context) => context.kind !== 'fair-lock' && context.queuedAt !== undefined));
  });

  it('publishes relock:wake when a release wakes a waiter, and the wait shows in waitedMs', async () => {
    const name = uniqueName('diag');
    // The holder's client has the default 30 s lease: only the release message can wake the waiter in time.
    const held = await s.other.lock(name).acquire();
    const startedAt = performance.now();
    const waiting = s.client.lock(name).acquire({ waitMs: 10_000 });
    await eventually(() => s.client.waiting === 1, 'the acquire waits in the queue');
    await sleep(100);
    const wakesBefore = sink.total('relock.wakes');
    await held.release();
    const lease = await waiting;
    const waitedAtLeast = performance.now() - startedAt - 50;
    await lease.release();

    const wakes = messages['relock:wake'].filter((message) => message.name === name);
    assert.equal(wakes, [{ clientId: s.client.id, name }]);
    assert.is(sink.total('relock.wakes') - wakesBefore, 1);
    const [span] = spansOf(name, 'relock.acquire').filter((recorded) => recorded.attributes['relock.client_id'] === s.client.id);
    assert.ok(span, 'the waiting acquire has a span');
    assert.is(span!.attributes['relock.fencing_token'], lease.fencingToken);
    assert.ok((span!.attributes['relock.waited_ms'] as number) >= Math.min(100, waitedAtLeast), `waited ${span!.attributes['relock.waited_ms']} ms`);
  });

  it('publishes relock:lost with clientId and name when forceUnlock() ends a hold of this client', async () => {
    const name = uniqueName('diag');
    const lock = s.client.lock(name);
    const lease: Lease = await lock.acquire();
    const lostBefore = sink.total('relock.lost');
    assert.ok(await lock.forceUnlock());

    const lost = messages['relock:lost'].filter((message) => message.name === name);
    assert.is(lost.length, 1);
    assert.is(lost[0]!.clientId, s.client.id);
    assert.is((lost[0]!.error as { code?: string }).code, 'ERR_LOCK_LOST');
    assert.is(lost[0]!.error, lease.signal.reason, 'the message carries the reason lease.signal aborted with');
    assert.is(sink.total('relock.lost') - lostBefore, 1);
    assert.ok(sink.points.some((point) => point.name === 'relock.lost' && point.attributes['relock.name'] === name));

    const error = await rejects(lease.release());
    assert.is(error.code, 'ERR_LOCK_NOT_HELD');
    const [release] = spansOf(name, 'relock.release');
    assert.is(release?.attributes['error.type'], 'ERR_LOCK_NOT_HELD');
    assert.is(release?.status?.code, 2);
  });

  it('publishes relock:renew with the names of the holds each renewal batch renewed', async () => {
    const name = uniqueName('diag');
    const renewedBefore = sink.total('relock.renewed');
    const lease = await s.client.lock(name).acquire();
    try {
      await eventually(
        () => messages['relock:renew'].some((message) => message.clientId === s.client.id && message.names.includes(name)),
        'a renewal of the hold is published',
      );
    } finally {
      await lease.release();
    }
    const renewal = messages['relock:renew'].find((message) => message.names.includes(name))!;
    assert.ok(Array.isArray(renewal.names));
    assert.ok(sink.total('relock.renewed') - renewedBefore >= 1);
  });

  it('leaves no subscriber behind once unsubscribed, and records nothing more', async () => {
    unsubscribeAll();
    for (const name of ['relock:acquire', 'relock:release']) assert.not.ok(tracingChannel(name).hasSubscribers, `${name} has no subscribers`);
    for (const name of CHANNELS) assert.not.ok(channel(name).hasSubscribers, `${name} has no subscribers`);

    const spans = sink.spans.length;
    const name = uniqueName('diag');
    await (await s.client.lock(name).acquire()).release();
    assert.is(sink.spans.length, spans);
  });
});

type Traced = AcquireTraceContext & { error?: unknown };
type Made = Lock | Semaphore;

describe('diagnostics_channel: every acquire() and release() that rejects is traced, with its error', (it) => {
  const s = setup(it);
  const seen = { acquire: [] as { event: 'start' | 'error'; context: Traced }[], release: [] as { event: 'start' | 'error'; context: Traced }[] };
  const noop = () => undefined;
  const handlers = (operation: 'acquire' | 'release') => ({
    start: (context: unknown) => void seen[operation].push({ event: 'start', context: context as Traced }),
    error: (context: unknown) => void seen[operation].push({ event: 'error', context: context as Traced }),
    end: noop,
    asyncStart: noop,
    asyncEnd: noop,
  });
  const acquireHandlers = handlers('acquire');
  const releaseHandlers = handlers('release');
  it.before(() => {
    tracingChannel('relock:acquire').subscribe(acquireHandlers);
    tracingChannel('relock:release').subscribe(releaseHandlers);
  });
  it.after(() => {
    tracingChannel('relock:acquire').unsubscribe(acquireHandlers);
    tracingChannel('relock:release').unsubscribe(releaseHandlers);
  });

  /** Each kind: how to make it, and a lock of another client that keeps it from being taken. */
  const KINDS: readonly { kind: LockKind; make: (client: LockClient, name: string) => Made; blocker: (client: LockClient, name: string) => Made }[] = [
    { kind: 'lock', make: (c, n) => c.lock(n), blocker: (c, n) => c.lock(n) },
    { kind: 'fair-lock', make: (c, n) => c.fairLock(n), blocker: (c, n) => c.fairLock(n) },
    { kind: 'read-lock', make: (c, n) => c.readWriteLock(n).readLock(), blocker: (c, n) => c.readWriteLock(n).writeLock() },
    { kind: 'write-lock', make: (c, n) => c.readWriteLock(n).writeLock(), blocker: (c, n) => c.readWriteLock(n).writeLock() },
    { kind: 'semaphore', make: (c, n) => c.semaphore(n, { permits: 1 }), blocker: (c, n) => c.semaphore(n, { permits: 1 }) },
    {
      kind: 'multi-lock',
      make: (c, n) => c.multiLock([c.lock(`${n}:a`), c.fairLock(`${n}:b`)]),
      blocker: (c, n) => c.multiLock([c.lock(`${n}:a`), c.fairLock(`${n}:b`)]),
    },
  ];

  /**
   * Runs `call`, which must reject, and checks that exactly one trace of `operation` began for the
   * lock during it, and ended with that very error.
   */
  async function tracedRejection(operation: 'acquire' | 'release', made: Made, kind: LockKind, what: string, call: () => Promise<unknown>): Promise<any> {
    const from = seen[operation].length;
    const error = await rejects(call());
    const own = seen[operation].slice(from).filter(({ context }) => context.name === made.name && context.kind === kind);
    assert.equal(
      own.map(({ event }) => event),
      ['start', 'error'],
      `${kind}: ${what} (rejected with ${error?.code ?? error?.name}) is one ${operation} trace that ends with its error`,
    );
    assert.is(own[1]!.context.error, error, `${kind}: ${what}: the trace's error is the rejection`);
    return error;
  }

  for (const { kind, make, blocker } of KINDS) {
    it(`traces every rejected acquire(), tryAcquire() and runExclusive() of a ${kind}`, async () => {
      const name = uniqueName('diag');
      const lock = make(s.client, name);
      const held = await blocker(s.other, name).acquire();
      try {
        const timeout = await tracedRejection('acquire', lock, kind, 'acquire({ waitMs: 0 }) of a held lock', () => lock.acquire({ waitMs: 0 }));
        assert.is(timeout.code, 'ERR_LOCK_TIMEOUT');
        assert.is((await tracedRejection('acquire', lock, kind, 'acquire({ waitMs: 30 }) of a held lock', () => lock.acquire({ waitMs: 30 }))).code, 'ERR_LOCK_TIMEOUT');
        const fn = () => assert.unreachable('fn never runs');
        assert.is((await tracedRejection('acquire', lock, kind, 'runExclusive() of a held lock', () => lock.runExclusive(fn, { waitMs: 0 }))).code, 'ERR_LOCK_TIMEOUT');
      } finally {
        await held.release();
      }
      const reason = new Error('given up');
      assert.is(await tracedRejection('acquire', lock, kind, 'acquire() with an aborted signal', () => lock.acquire({ signal: AbortSignal.abort(reason) })), reason);
      if (kind === 'write-lock') {
        const reading = await s.client.readWriteLock(name).readLock().acquire();
        const upgrade = await reading.run(() => tracedRejection('acquire', lock, kind, 'acquire() from a reader\'s context', () => lock.acquire()));
        assert.is(upgrade.code, 'ERR_LOCK_UPGRADE');
        await reading.release();
      }
      // A closed client: refused before any I/O, traced all the same.
      const closing = s.f.client();
      const closed = make(closing, name);
      await closing.close();
      for (const [what, call] of [
        ['acquire() on a closed client', () => closed.acquire()],
        ['tryAcquire() on a closed client', () => closed.tryAcquire()],
        ['runExclusive() on a closed client', () => closed.runExclusive(() => undefined)],
      ] as const) {
        assertClosedBeforeCall(await tracedRejection('acquire', closed, kind, what, call), what);
      }
    });

    it(`traces every rejected lease.release() of a ${kind}, local refusals included`, async () => {
      const name = uniqueName('diag');
      const lock = make(s.client, name);
      // Released twice: the second is refused without I/O.
      const lease = await lock.acquire();
      await lease.release();
      assert.is((await tracedRejection('release', lock, kind, 'a second release()', () => lease.release())).code, 'ERR_LOCK_NOT_HELD');
      // The hold is gone in Redis: force-unlocked, or (a semaphore lease) its fixed lease ended.
      if (kind === 'semaphore') {
        const semaphore = lock as Semaphore;
        const short = await semaphore.acquire({ leaseMs: 100 });
        await eventually(async () => (await semaphore.availablePermits()) === 1, 'the lease ends');
        assert.is((await tracedRejection('release', lock, kind, 'release() of a lease that ended', () => short.release())).code, 'ERR_LOCK_NOT_HELD');
      } else {
        const gone = await lock.acquire();
        await (lock as Lock).forceUnlock();
        assert.is((await tracedRejection('release', lock, kind, 'release() of a force-unlocked hold', () => gone.release())).code, 'ERR_LOCK_NOT_HELD');
      }
      // After close(): refused without I/O.
      const closing = s.f.client();
      const closed = make(closing, name);
      const orphan = await closed.acquire();
      await closing.close();
      assert.is((await tracedRejection('release', closed, kind, 'release() after close()', () => orphan.release())).code, 'ERR_LOCK_CLOSED');
    });
  }

  it('makes no trace for bad arguments, rejected before any I/O (documented)', async () => {
    const name = uniqueName('diag');
    const from = seen.acquire.length;
    const lock = s.client.lock(name);
    assert.instance(await rejects(lock.acquire({ waitMs: -1 })), RangeError);
    assert.instance(await rejects(lock.tryAcquire({ leaseMs: 'x' as unknown as number })), TypeError);
    assert.instance(await rejects(lock.runExclusive(undefined as unknown as () => void)), TypeError);
    assert.is(seen.acquire.slice(from).filter(({ context }) => context.name === name).length, 0);
  });
});
