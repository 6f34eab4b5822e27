// relock's diagnostics channels, seen through the OpenTelemetry-shaped bridge of
// examples/diagnostics/otel-bridge.ts (and through raw subscribers, for the message shapes), against
// a private Redis. The client's lease is short, so its watchdog renews every 20 ms.
import * as assert from 'uvu/assert';
import { channel, subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { bridge, memorySink, type RecordedSpan } from '../../examples/diagnostics/otel-bridge.ts';
import type { AcquireTraceContext, Lease, LostMessage, RenewMessage, WakeMessage } from '../../src/index.ts';
import { describe, eventually, rejects, uniqueName } from '../helpers/describe.ts';
import { setup, sleep } from '../helpers/fixture.ts';

const CHANNELS = ['relock:lost', 'relock:renew', 'relock:wake'] as const;

describe('diagnostics_channel (the OpenTelemetry bridge example)', (it) => {
  const s = setup(it, { leaseMs: 60 });
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
