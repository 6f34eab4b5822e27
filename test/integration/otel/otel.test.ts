// relock/otel with the real OpenTelemetry SDK: in-memory span and metric exporters, the
// AsyncLocalStorage context manager NodeSDK registers on Node 20, and @opentelemetry/instrumentation-ioredis
// for the Redis command spans that must nest under relock's acquire span. Private redis-servers.
import * as assert from 'uvu/assert';
import { createRequire } from 'node:module';
import { tracingChannel } from 'node:diagnostics_channel';
import { context, metrics, trace, SpanStatusCode } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { RedisInstrumentation } from '@opentelemetry/instrumentation-redis';
import { LockClient, type Lease } from '../../../src/index.ts';
import { RelockInstrumentation } from '../../../src/otel/index.ts';
import { describe, eventually, uniqueName } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';
import { startCluster, type RedisCluster } from '../../helpers/cluster.ts';
import { startMasters, type Masters } from '../redlock/masters.ts';

// The SDK as an application sets it up (NodeSDK does the same three things).
const contextManager = new AsyncLocalStorageContextManager().enable();
context.setGlobalContextManager(contextManager);
const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
trace.setGlobalTracerProvider(tracerProvider);
const reader = new PeriodicExportingMetricReader({ exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE), exportIntervalMillis: 3_600_000 });
const meterProvider = new MeterProvider({ readers: [reader] });
metrics.setGlobalMeterProvider(meterProvider);

// instrumentation-ioredis patches ioredis when it is required after it is enabled: the prototype it
// patches is the one every ioredis client shares, relock's own connections included.
new IORedisInstrumentation();
new RedisInstrumentation();
const require = createRequire(import.meta.url);
const { Redis } = require('ioredis') as typeof import('ioredis');
const { createClient } = require('redis') as typeof import('redis');

const relock = new RelockInstrumentation({ enabled: false });
relock.setTracerProvider(tracerProvider);
relock.setMeterProvider(meterProvider);

const tracer = tracerProvider.getTracer('test');
const finished = () => spans.getFinishedSpans();
const named = (name: string, lock?: string) => finished().filter((span) => span.name === name && (lock === undefined || span.attributes['relock.lock.name'] === lock));
const childrenOf = (parent: ReadableSpan) => finished().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId);

/** The data points of one metric, from a fresh collection. */
async function points(name: string): Promise<DataPoint<unknown>[]> {
  const { resourceMetrics } = await reader.collect();
  for (const scope of resourceMetrics.scopeMetrics) for (const metric of scope.metrics) if (metric.descriptor.name === name) return metric.dataPoints as DataPoint<unknown>[];
  return [];
}
/** The sum of a counter's (or up-down counter's) points whose attributes include `where`. */
async function total(name: string, where: Record<string, unknown> = {}): Promise<number> {
  let sum = 0;
  for (const point of await points(name)) {
    if (Object.entries(where).every(([key, value]) => point.attributes[key] === value)) sum += typeof point.value === 'number' ? point.value : (point.value as Histogram).count;
  }
  return sum;
}

describe('relock/otel: RelockInstrumentation with the OpenTelemetry SDK', (it) => {
  let server: RedisServer;
  let redis: InstanceType<typeof Redis>;
  let client: LockClient;
  it.before(async () => {
    server = await startRedis({ private: true });
    redis = new Redis(server.url);
    client = new LockClient({ redis, leaseMs: 1_000 });
    relock.setConfig({ lockName: (name) => name });
    relock.enable();
  });
  it.after(async () => {
    relock.disable();
    await client.close();
    redis.disconnect();
    await server.stop();
  });

  it('costs nothing while disabled: no subscriber on any relock channel, no span', async () => {
    relock.disable();
    try {
      assert.is(tracingChannel('relock:acquire').hasSubscribers, false);
      assert.is(tracingChannel('relock:release').hasSubscribers, false);
      const name = uniqueName('otel-off');
      await client.lock(name).runExclusive(() => undefined);
      assert.is(named('relock.acquire', name).length, 0);
    } finally {
      relock.enable();
    }
    assert.is(tracingChannel('relock:acquire').hasSubscribers, true);
  });

  it("nests the client's Redis command spans under relock.acquire, which is a child of the caller's span", async () => {
    const name = uniqueName('otel-nest');
    const lock = client.lock(name);
    let lease: Lease | undefined;
    await tracer.startActiveSpan('request', async (request) => {
      lease = await lock.acquire();
      request.end();
    });
    await lease!.release();
    const [acquire] = named('relock.acquire', name);
    const [request] = finished().filter((span) => span.name === 'request');
    assert.ok(acquire && request);
    assert.is(acquire.parentSpanContext?.spanId, request.spanContext().spanId, 'the acquire span is a child of the request');
    const commands = childrenOf(acquire);
    assert.ok(commands.length >= 1, 'at least one command span under the acquire');
    assert.ok(commands.every((span) => span.instrumentationScope.name === '@opentelemetry/instrumentation-ioredis'), commands.map((s) => s.name).join());
    assert.ok(commands.some((span) => span.name === 'evalsha' || span.name === 'eval'), commands.map((s) => s.name).join());
    assert.equal(
      { kind: acquire.attributes['relock.lock.kind'], topology: acquire.attributes['relock.lock.topology'], layout: acquire.attributes['relock.lock.layout'], result: acquire.attributes['relock.lock.result'] },
      { kind: 'lock', topology: 'single', layout: 'relock', result: 'acquired' },
    );
    // The hold: from the acquire to the release, a child of the request, linked to the acquire.
    const [hold] = named('relock.hold', name);
    assert.ok(hold);
    assert.is(hold.parentSpanContext?.spanId, request.spanContext().spanId);
    assert.is(hold.links[0]?.context.spanId, acquire.spanContext().spanId);
    assert.is(hold.attributes['relock.lease.outcome'], 'released');
    const [release] = named('relock.release', name);
    assert.ok(release && childrenOf(release).length >= 1, 'the release command spans nest under relock.release');
  });

  it('bad options: a TypeError naming the option, from the constructor and setConfig()', () => {
    assert.throws(() => new RelockInstrumentation({ lockName: 'yes' as never }), (error: Error) => error instanceof TypeError && /`lockName`/.test(error.message));
    assert.throws(() => relock.setConfig(null as never), (error: Error) => error instanceof TypeError && /`config`/.test(error.message));
    assert.equal(relock.getConfig().enabled, true, 'getConfig() fills in enabled (NodeSDK reads it)');
  });

  it('keeps lock names out by default (lockName hook)', async () => {
    relock.setConfig({});
    try {
      const name = uniqueName('otel-secret');
      spans.reset();
      await client.lock(name).runExclusive(() => undefined);
      const ours = finished().filter((span) => span.instrumentationScope.name === 'relock');
      assert.is(ours.length, 3, ours.map((s) => s.name).join());
      for (const span of ours) assert.is(span.attributes['relock.lock.name'], undefined);
    } finally {
      relock.setConfig({ lockName: (name) => name });
    }
  });

  it('a busy tryAcquire is a normal outcome: result busy, no ERROR status, not counted as an error', async () => {
    const name = uniqueName('otel-busy');
    const holder = await client.lock(name).acquire();
    const other = new LockClient({ redis: server.url });
    try {
      const before = await total('relock.lock.acquires', { 'relock.lock.result': 'busy' });
      assert.is(await other.lock(name).tryAcquire(), null);
      const [span] = named('relock.acquire', name).filter((s) => s.attributes['relock.lock.result'] === 'busy');
      assert.ok(span, 'a busy acquire span');
      assert.is(span.status.code, SpanStatusCode.UNSET);
      assert.is(span.attributes['error.type'], undefined);
      assert.is(await total('relock.lock.acquires', { 'relock.lock.result': 'busy' }), before + 1);
      const errors = (await points('relock.lock.acquires')).filter((p) => p.attributes['error.type'] !== undefined && p.attributes['relock.lock.result'] === 'busy');
      assert.is(errors.length, 0);
      // The same wait with acquire({ waitMs: 0 }) is a timeout, and an error.
      await other.lock(name).acquire({ waitMs: 0 }).catch(() => undefined);
      const [timeout] = named('relock.acquire', name).filter((s) => s.attributes['relock.lock.result'] === 'timeout');
      assert.ok(timeout);
      assert.is(timeout.status.code, SpanStatusCode.ERROR);
      assert.is(timeout.attributes['error.type'], 'ERR_LOCK_TIMEOUT');
    } finally {
      await holder.release();
      await other.close();
    }
  });

  it('a lost lease: an event with its error on the hold span, status ERROR, counted, holders back to 0', async () => {
    const name = uniqueName('otel-lost');
    const attrs = { 'relock.lock.kind': 'lock' };
    const activeBefore = await total('relock.lock.active_leases', attrs);
    const lostBefore = await total('relock.lock.lost_leases', attrs);
    const lease = await client.lock(name).acquire();
    assert.is(await total('relock.lock.active_leases', attrs), activeBefore + 1);
    await client.lock(name).forceUnlock();
    await eventually(() => lease.signal.aborted, 'the lease is lost');
    const [hold] = named('relock.hold', name);
    assert.ok(hold, 'the hold span ended');
    assert.is(hold.status.code, SpanStatusCode.ERROR);
    assert.is(hold.attributes['relock.lease.outcome'], 'lost');
    const event = hold.events.find((e) => e.name === 'relock.lock.lost');
    assert.ok(event);
    assert.is(event.attributes?.['error.type'], 'ERR_LOCK_LOST');
    assert.is(await total('relock.lock.lost_leases', attrs), lostBefore + 1);
    assert.is(await total('relock.lock.active_leases', attrs), activeBefore);
    await lease.release().catch(() => undefined);
    assert.is(named('relock.hold', name).length, 1, 'a release after the loss ends no second hold');
  });

  it('metrics in seconds: wait and hold durations, waiters and holders, renewals and wake-ups', async () => {
    const name = uniqueName('otel-metrics');
    const lock = client.lock(name);
    const wakeBefore = await total('relock.lock.wakeups');
    const renewBefore = await total('relock.lock.renewals');
    const lease = await lock.acquire();
    const other = new LockClient({ redis: server.url });
    try {
      const waiting = other.lock(name).acquire({ waitMs: 10_000 });
      await eventually(async () => (await total('relock.lock.pending_acquires', { 'relock.lock.kind': 'lock' })) === 1, 'one acquire waits');
      // A watchdog renewal of the 1 s lease comes within ~1/3 s.
      await eventually(async () => (await total('relock.lock.renewals')) > renewBefore, 'a renewal');
      await lease.release();
      await (await waiting).release();
      assert.ok((await total('relock.lock.wakeups')) > wakeBefore, 'the waiter was woken');
      assert.is(await total('relock.lock.pending_acquires', { 'relock.lock.kind': 'lock' }), 0);
      const durations = await points('relock.lock.acquire.duration');
      const acquired = durations.filter((p) => p.attributes['relock.lock.result'] === 'acquired');
      assert.ok(acquired.length > 0);
      // Seconds: the waiter waited for at least a renewal (a few hundred ms), far less than 10 s.
      const max = Math.max(...acquired.map((p) => (p.value as Histogram).max ?? 0));
      assert.ok(max > 0.05 && max < 10, `max wait ${max} s`);
      const holds = await points('relock.lock.lease.duration');
      assert.ok(holds.some((p) => p.attributes['relock.lease.outcome'] === 'released'));
      // Buckets for seconds, 5 ms to 5 min (the SDK's default boundaries, 0, 5, 10 … 10000, are for
      // milliseconds: every wait under 5 s would share one bucket and histogram_quantile() say 2.5 s).
      for (const point of [...acquired, ...holds]) {
        const { boundaries } = (point.value as Histogram).buckets;
        assert.equal([boundaries[0], boundaries.at(-1)], [0.005, 300]);
      }
      const [metric] = (await reader.collect()).resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === 'relock.lock.lease.duration');
      assert.is(metric?.descriptor.unit, 's');
    } finally {
      await other.close();
    }
  });
});

describe('relock/otel with node-redis, and an aborted acquire', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis({ private: true });
    relock.enable();
  });
  it.after(async () => {
    relock.disable();
    await server.stop();
  });

  it('node-redis 5: relock spans and metrics; instrumentation-redis 0.71 makes no command spans for it', async () => {
    const redis = await createClient({ url: server.url }).connect();
    const client = new LockClient({ redis });
    try {
      const name = uniqueName('otel-node-redis');
      await tracer.startActiveSpan('request', async (request) => {
        await client.lock(name).runExclusive(() => undefined);
        request.end();
      });
      const [acquire] = named('relock.acquire', name);
      assert.ok(acquire);
      assert.equal([acquire.attributes['relock.lock.result'], named('relock.hold', name)[0]?.attributes['relock.lease.outcome']], ['acquired', 'released']);
      // instrumentation-redis patches @redis/client ^1 (node-redis 4) and redis 2.6-3 only. When this
      // fails, it covers node-redis 5: say so in docs/diagnostics.md.
      assert.is(childrenOf(acquire).length, 0, 'no command spans from instrumentation-redis for node-redis 5');
    } finally {
      await client.close();
      await redis.close();
    }
  });

  it('an acquire aborted by its signal: result aborted, ERROR status, error.type AbortError', async () => {
    const redis = new Redis(server.url);
    const client = new LockClient({ redis });
    try {
      const name = uniqueName('otel-abort');
      const holder = await client.lock(name).acquire();
      const other = new LockClient({ redis: server.url });
      const controller = new AbortController();
      const waiting = other.lock(name).acquire({ waitMs: 10_000, signal: controller.signal }).catch((error: unknown) => error);
      await eventually(async () => (await total('relock.lock.pending_acquires', { 'relock.lock.kind': 'lock' })) === 1, 'the acquire waits');
      controller.abort();
      await waiting;
      await holder.release();
      await other.close();
      const [aborted] = named('relock.acquire', name).filter((span) => span.attributes['relock.lock.result'] === 'aborted');
      assert.ok(aborted, named('relock.acquire', name).map((s) => s.attributes['relock.lock.result']).join());
      assert.is(aborted.status.code, SpanStatusCode.ERROR);
      assert.is(aborted.attributes['error.type'], 'AbortError');
    } finally {
      await client.close();
      redis.disconnect();
    }
  });
});

describe('relock/otel on a Redlock quorum and on a Cluster', (it) => {
  let masters: Masters;
  let cluster: RedisCluster;
  it.before(async () => {
    masters = await startMasters(3);
    cluster = await startCluster();
    relock.enable();
  });
  it.after(async () => {
    relock.disable();
    await masters.close();
    await cluster.stop();
  });

  it('a Redlock acquire: topology redlock, the masters\' command spans under it', async () => {
    const client = masters.client();
    const name = uniqueName('otel-redlock');
    await tracer.startActiveSpan('request', async (request) => {
      await client.lock(name).runExclusive(() => undefined);
      request.end();
    });
    const [acquire] = named('relock.acquire', name);
    assert.ok(acquire);
    assert.is(acquire.attributes['relock.lock.topology'], 'redlock');
    assert.is(acquire.attributes['relock.lock.result'], 'acquired');
    // One script call per master, each a command span under the acquire.
    const commands = childrenOf(acquire).filter((span) => span.instrumentationScope.name === '@opentelemetry/instrumentation-ioredis');
    const ports = new Set(commands.map((span) => span.attributes['server.port'] ?? span.attributes['net.peer.port']));
    assert.is(ports.size, 3, `command spans on every master: ${commands.map((s) => s.name).join()}`);
  });

  it('a Cluster acquire: topology cluster, command spans under it', async () => {
    const connection = cluster.connect();
    const client = new LockClient({ redis: connection });
    try {
      const name = uniqueName('otel-cluster');
      await client.lock(name).runExclusive(() => undefined);
      const [acquire] = named('relock.acquire', name);
      assert.ok(acquire);
      assert.is(acquire.attributes['relock.lock.topology'], 'cluster');
      assert.ok(childrenOf(acquire).length >= 1, 'command spans under the acquire');
    } finally {
      await client.close();
      connection.disconnect();
    }
  });
});
