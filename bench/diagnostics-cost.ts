// What relock's diagnostics cost, in one process: `node --import tsx bench/diagnostics-cost.ts`.
//
// 1. The guard every publication sits behind (`if (channel.hasSubscribers) ...`), timed over N calls
//    against an empty loop, in a process where nobody has subscribed yet; then a publication to a
//    no-op subscriber; then the guard again once the subscribers are gone (the channel objects have
//    changed shape by then, which is what a process that subscribed once pays); then traceAcquire and
//    traceRelease around an already resolved function, with and without subscribers.
// 2. acquire+release on a private redis-server, in interleaved slices without subscribers, with a
//    no-op subscriber on every relock channel, and with relock/otel's RelockInstrumentation enabled
//    over the OpenTelemetry SDK (spans batched to an exporter that drops them, metrics aggregated):
//    wall time and this process's CPU per round, medians. After each (un)subscribe some rounds run unmeasured: subscribing changes the channel objects' shape,
//    and V8 re-optimising the code that reads them is a one-off, not a per-round cost.
//
// 3. relock/otel's own CPU per traceAcquire+traceRelease pair, enabled against disabled, without Redis.
//
// Figures are medians over slices; the machine is shared, so read differences of a few percent in
// part 2 as noise. Options: --slices 15 --rounds 600 --settle 150 (part 2, per slice and variant)
// --calls 5000000 (part 1, per slice).
import { existsSync } from 'node:fs';
import { channel, tracingChannel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { copyBuild } from './lib/bundle.ts';
import { parseArgs } from 'node:util';
import type { Lease, LockClient as Client } from '../dist/index.mjs';
import { context, metrics, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import type { RelockInstrumentation as Instrumentation } from '../src/otel/index.ts';
import { diagnostics, traceAcquire, traceRelease } from '../src/diagnostics.ts';
import { startPrivateRedis } from '../test/helpers/redis.ts';
import { median } from './lib/stats.ts';

const { values } = parseArgs({
  options: {
    slices: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '600' },
    settle: { type: 'string', default: '150' },
    calls: { type: 'string', default: '5000000' },
  },
});
const SLICES = Number(values.slices);
const ROUNDS = Number(values.rounds);
const SETTLE = Number(values.settle);
const CALLS = Number(values.calls);
const ASYNC_CALLS = Math.max(1, Math.floor(CALLS / 50));

const here = fileURLToPath(new URL('.', import.meta.url));
const out = (line = '') => process.stdout.write(`${line}\n`);
const ns = (value: number) => `${value.toFixed(2)} ns`;
const us = (value: number) => `${value.toFixed(1)} µs`;
/** One figure per line, labels padded to one column. */
const figure = (label: string, text: string) => out(`   ${label.padEnd(58)} ${text}`);

// Every channel relock publishes on, and the no-op subscribers of the "with" variants.
const noop = (): void => undefined;
const tracing: TracingChannelSubscribers<object> = { start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop };
const plain = [channel('relock:lost'), channel('relock:renew'), channel('relock:wake')];
const traced = [tracingChannel('relock:acquire'), tracingChannel('relock:release')];
function subscribeAll(): void {
  for (const each of traced) each.subscribe(tracing);
  for (const each of plain) each.subscribe(noop);
}
function unsubscribeAll(): void {
  for (const each of traced) each.unsubscribe(tracing);
  for (const each of plain) each.unsubscribe(noop);
}

/** Nanoseconds per call of `body` over `calls` calls; what it returns is summed so nothing is optimised away. */
let sink = 0;
function timeSync(calls: number, body: (i: number) => number): number {
  const start = process.hrtime.bigint();
  let sum = 0;
  for (let i = 0; i < calls; i++) sum += body(i);
  const elapsed = Number(process.hrtime.bigint() - start);
  sink += sum;
  return elapsed / calls;
}

async function timeAsync(calls: number, body: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) await body();
  return Number(process.hrtime.bigint() - start) / calls;
}

const message = { clientId: 'c', name: 'n' };
const empty = (i: number) => i & 1;
// The guards as relock writes them (src/runtime/waiting.ts, src/diagnostics.ts).
const wakeGuard = (i: number) => {
  if (diagnostics.wake.hasSubscribers) {
    diagnostics.wake.publish({ clientId: message.clientId, name: message.name });
    return 1;
  }
  return i & 1;
};
const tracingGuard = (i: number) => (diagnostics.acquire.hasSubscribers ? 1 : i & 1);
const lease = Promise.resolve({ fencingToken: 1 });
const acquirer = { name: 'n', kind: 'lock', clientId: 'c', traits: { topology: 'single', layout: 'relock' } } as const;
const acquireTraced = () => traceAcquire(acquirer, false, () => lease);
const releaseTraced = () => traceRelease({ name: 'n' } as Lease, 'lock', 'c', () => Promise.resolve());

/** Medians of each variant over SLICES slices, variants in a rotating order within each slice. */
async function sliced(variants: [string, () => number | Promise<number>][]): Promise<Map<string, number>> {
  const samples = new Map<string, number[]>(variants.map(([name]) => [name, []]));
  for (let slice = 0; slice < SLICES; slice++) {
    for (let turn = 0; turn < variants.length; turn++) {
      const [name, run] = variants[(slice + turn) % variants.length]!;
      samples.get(name)!.push(await run());
    }
  }
  return new Map([...samples].map(([name, values]) => [name, median(values)]));
}

out(`relock diagnostics cost, Node ${process.version}: medians of ${SLICES} slices`);
out();
out(`1. In-process, ${CALLS.toLocaleString('en-US')} calls per slice (${ASYNC_CALLS.toLocaleString('en-US')} for the async ones)`);
const never = await sliced([
  ['empty loop', () => timeSync(CALLS, empty)],
  ['wake guard, never subscribed', () => timeSync(CALLS, wakeGuard)],
  ['tracing guard, never subscribed', () => timeSync(CALLS, tracingGuard)],
]);
const bare = never.get('empty loop')!;
figure('empty loop', `${ns(bare)} per call`);
figure('channel.hasSubscribers guard, nobody ever subscribed', `${ns(never.get('wake guard, never subscribed')! - bare)} per call above the empty loop`);
figure('tracingChannel.hasSubscribers guard, same', `${ns(never.get('tracing guard, never subscribed')! - bare)} per call above the empty loop`);
const awaited = await sliced([
  ['acquire, no subscriber', () => timeAsync(ASYNC_CALLS, acquireTraced)],
  ['release, no subscriber', () => timeAsync(ASYNC_CALLS, releaseTraced)],
  ['bare await', () => timeAsync(ASYNC_CALLS, () => lease)],
]);
subscribeAll();
const subscribed = await sliced([
  ['empty loop', () => timeSync(CALLS, empty)],
  ['wake publish, one subscriber', () => timeSync(CALLS, wakeGuard)],
  ['acquire, subscribers', () => timeAsync(ASYNC_CALLS, acquireTraced)],
  ['release, subscribers', () => timeAsync(ASYNC_CALLS, releaseTraced)],
  ['bare await', () => timeAsync(ASYNC_CALLS, () => lease)],
]);
unsubscribeAll();
const after = await sliced([
  ['empty loop', () => timeSync(CALLS, empty)],
  ['wake guard, unsubscribed', () => timeSync(CALLS, wakeGuard)],
  ['tracing guard, unsubscribed', () => timeSync(CALLS, tracingGuard)],
]);
figure("channel('relock:wake') publish to a no-op subscriber", `${ns(subscribed.get('wake publish, one subscriber')! - subscribed.get('empty loop')!)} per call (the message object included)`);
figure('the guards again once the subscribers are gone', `channel ${ns(after.get('wake guard, unsubscribed')! - after.get('empty loop')!)}, tracingChannel ${ns(after.get('tracing guard, unsubscribed')! - after.get('empty loop')!)} per call`);
const awaitBare = median([awaited.get('bare await')!, subscribed.get('bare await')!]);
figure('traceAcquire around a resolved promise', `${ns(awaited.get('acquire, no subscriber')! - awaitBare)} without subscribers, ${ns(subscribed.get('acquire, subscribers')! - awaitBare)} with (above a bare await of ${ns(awaitBare)})`);
figure('traceRelease, same', `${ns(awaited.get('release, no subscriber')! - awaitBare)} without subscribers, ${ns(subscribed.get('release, subscribers')! - awaitBare)} with`);

// Part 2: the published bundles (copied, so a rebuild meanwhile cannot pull them away), else src/.
const dist = join(here, '..', 'dist', 'index.mjs');
let from: string;
let otelFrom: string;
if (existsSync(dist)) {
  from = copyBuild(join(here, '..', 'dist'), join(here, 'results', 'diagnostics-dist'));
  otelFrom = pathToFileURL(join(here, 'results', 'diagnostics-dist', 'otel.mjs')).href;
} else {
  from = new URL('../src/index.ts', import.meta.url).href;
  otelFrom = new URL('../src/otel/index.ts', import.meta.url).href;
}
const { LockClient } = (await import(from)) as { LockClient: typeof Client };

// relock/otel with the OpenTelemetry SDK as an application sets it up: the AsyncLocalStorage context
// manager, a tracer provider batching spans to an exporter (one that drops them: the cost measured
// is relock's and the SDK's in this process, not a collector's), a meter provider with a reader.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const dropping: SpanExporter = { export: (_spans: ReadableSpan[], done) => done({ code: 0 }), shutdown: async () => undefined };
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropping)] });
trace.setGlobalTracerProvider(tracerProvider);
class PullReader extends MetricReader {
  protected override onForceFlush = async () => undefined;
  protected override onShutdown = async () => undefined;
}
const meterProvider = new MeterProvider({ readers: [new PullReader()] });
metrics.setGlobalMeterProvider(meterProvider);
const { RelockInstrumentation } = (await import(otelFrom)) as { RelockInstrumentation: typeof Instrumentation };
const instrumentation = new RelockInstrumentation({ enabled: false });
const server = await startPrivateRedis();
const client = new LockClient({ redis: server.url });
try {
  out();
  out(`2. acquire+release on a private redis-server (${from.includes('/src/') ? 'src/ through tsx' : 'dist/index.mjs'}), ${ROUNDS} measured rounds per slice and variant after ${SETTLE} unmeasured`);
  const lock = client.lock('diagnostics-cost');
  const rounds = async (count: number) => {
    for (let i = 0; i < count; i++) await (await lock.acquire()).release();
  };
  await rounds(500);
  const VARIANTS = ['without', 'with', 'otel'] as const;
  const wall = new Map<string, number[]>(VARIANTS.map((variant) => [variant, []]));
  const cpu = new Map<string, number[]>(VARIANTS.map((variant) => [variant, []]));
  for (let slice = 0; slice < SLICES; slice++) {
    // Each variant first, middle and last in turn.
    for (let turn = 0; turn < VARIANTS.length; turn++) {
      const variant = VARIANTS[(slice + turn) % VARIANTS.length]!;
      if (variant === 'with') subscribeAll();
      if (variant === 'otel') instrumentation.enable();
      await rounds(SETTLE);
      const cpuAt = process.cpuUsage();
      const start = process.hrtime.bigint();
      await rounds(ROUNDS);
      const elapsed = Number(process.hrtime.bigint() - start) / 1000;
      const used = process.cpuUsage(cpuAt);
      if (variant === 'with') unsubscribeAll();
      if (variant === 'otel') instrumentation.disable();
      wall.get(variant)!.push(elapsed / ROUNDS);
      cpu.get(variant)!.push((used.user + used.system) / ROUNDS);
    }
  }
  const [wallWithout, wallWith, cpuWithout, cpuWith] = [median(wall.get('without')!), median(wall.get('with')!), median(cpu.get('without')!), median(cpu.get('with')!)];
  const [wallOtel, cpuOtel] = [median(wall.get('otel')!), median(cpu.get('otel')!)];
  figure('without subscribers', `${us(wallWithout)} per round, ${us(cpuWithout)} of this process's CPU`);
  figure('with a no-op subscriber on every channel', `${us(wallWith)} per round (${(wallWith / wallWithout).toFixed(3)}×), ${us(cpuWith)} of CPU (${cpuWith >= cpuWithout ? '+' : '−'}${us(Math.abs(cpuWith - cpuWithout))})`);
  figure('relock/otel enabled (SDK: batched spans, dropped)', `${us(wallOtel)} per round (${(wallOtel / wallWithout).toFixed(3)}×, ${((1 - wallWithout / wallOtel) * 100).toFixed(1)} % fewer rounds/s), ${us(cpuOtel)} of CPU (+${us(Math.max(0, cpuOtel - cpuWithout))})`);
  const guards = never.get('wake guard, never subscribed')! - bare + (never.get('tracing guard, never subscribed')! - bare);
  out(`   Without subscribers a round reads hasSubscribers twice (acquire, release): ~${ns(Math.max(0, guards))} of a ${us(cpuWithout)} round,`);
  out(`   far below what these loops resolve; their difference above is the machine's noise plus what subscribers cost.`);

  // 3. relock/otel's own cost per call, without Redis: traceAcquire and traceRelease of a lease-like
  // object (a hold: two spans, seven measurements per pair) with the instrumentation enabled and not.
  out();
  out(`3. relock/otel in-process: traceAcquire + traceRelease around resolved functions, ${ASYNC_CALLS.toLocaleString('en-US')} pairs per slice`);
  const signal = new AbortController().signal;
  const held = { name: 'n', holdCount: 1, fencingToken: 1, signal } as unknown as Lease;
  const pair = async () => traceRelease(await traceAcquire(acquirer, false, async () => held), 'lock', 'c', () => Promise.resolve());
  const cpuPerPair = async () => {
    const at = process.cpuUsage();
    await timeAsync(ASYNC_CALLS, pair);
    const used = process.cpuUsage(at);
    return (used.user + used.system) * 1000 / ASYNC_CALLS;
  };
  const otelSlices = await sliced([
    ['disabled', cpuPerPair],
    ['enabled', async () => {
      instrumentation.enable();
      try {
        await timeAsync(Math.min(ASYNC_CALLS, 2_000), pair); // settle
        return await cpuPerPair();
      } finally {
        instrumentation.disable();
      }
    }],
  ]);
  figure('CPU per acquire+release pair, disabled', ns(otelSlices.get('disabled')!));
  figure('CPU per acquire+release pair, relock/otel enabled (SDK)', `${ns(otelSlices.get('enabled')!)} (+${us((otelSlices.get('enabled')! - otelSlices.get('disabled')!) / 1000)})`);
} finally {
  instrumentation.disable();
  await client.close();
  await server.stop();
  await tracerProvider.shutdown();
  await meterProvider.shutdown();
}
if (sink === -1) out('');
