// relock's diagnostics channels as OpenTelemetry-shaped spans and metrics, with nothing but
// node:diagnostics_channel, recorded by an in-memory sink: test/integration/otel/diagnostics.test.ts checks
// the channels through it. It was examples/diagnostics/otel-bridge.ts, a file to copy; relock/otel
// (src/otel/, docs/diagnostics.md) replaces it for users.
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import type { AcquireTraceContext, LostMessage, RenewMessage, WakeMessage } from '../../src/index.ts';

/** Attribute values, as OpenTelemetry takes them. */
export type Attributes = Record<string, string | number | boolean>;

/** What the bridge calls on a span: a subset of OpenTelemetry's `Span`. */
export interface SpanLike {
  setAttribute(key: string, value: string | number | boolean): unknown;
  /** `code` 2 is OpenTelemetry's `SpanStatusCode.ERROR`. */
  setStatus(status: { code: number; message?: string }): unknown;
  end(endTime?: number): void;
}

/** Where spans and measurements go: a subset of an OpenTelemetry `Tracer` and `Meter`. */
export interface Sink {
  startSpan(name: string, options: { startTime: number; attributes: Attributes }): SpanLike;
  counter(name: string): { add(value: number, attributes?: Attributes): void };
  histogram(name: string): { record(value: number, attributes?: Attributes): void };
}

/** Milliseconds since the epoch, with sub-millisecond precision (OpenTelemetry takes it as a `TimeInput`). */
const now = () => performance.timeOrigin + performance.now();

/** OpenTelemetry's `SpanStatusCode.ERROR`. */
const STATUS_ERROR = 2;

const TRACED = ['relock:acquire', 'relock:release'] as const;
const span = (channel: (typeof TRACED)[number]) => (channel === 'relock:acquire' ? 'relock.acquire' : 'relock.release');

/**
 * Subscribes to every relock channel and turns what they publish into spans (`relock.acquire`,
 * `relock.release`) and measurements (`relock.acquires`, `relock.releases`, `relock.errors`,
 * `relock.lost`, `relock.renewed`, `relock.wakes`, and the histogram `relock.acquire.wait`).
 * Returns the function that unsubscribes it all again.
 */
export function bridge(sink: Sink): () => void {
  const counters = {
    acquires: sink.counter('relock.acquires'),
    releases: sink.counter('relock.releases'),
    errors: sink.counter('relock.errors'),
    lost: sink.counter('relock.lost'),
    renewed: sink.counter('relock.renewed'),
    wakes: sink.counter('relock.wakes'),
  };
  const waited = sink.histogram('relock.acquire.wait');
  // One span per operation, keyed by its tracing context object (relock makes one per call).
  const open = new WeakMap<object, SpanLike>();
  const unsubscribers: (() => void)[] = [];

  for (const channelName of TRACED) {
    const acquire = channelName === 'relock:acquire';
    const finish = (context: AcquireTraceContext & { error?: unknown }) => {
      const current = open.get(context);
      if (!current) return;
      open.delete(context);
      const attributes: Attributes = { 'relock.kind': context.kind };
      if (context.error !== undefined) {
        const code = errorType(context.error);
        current.setAttribute('error.type', code);
        current.setStatus({ code: STATUS_ERROR, message: (context.error as Error)?.message ?? String(context.error) });
        counters.errors.add(1, { ...attributes, 'relock.operation': acquire ? 'acquire' : 'release', 'error.type': code });
      } else if (acquire) {
        // relock sets both on the context object itself when an acquire succeeds.
        if (context.fencingToken !== undefined) current.setAttribute('relock.fencing_token', context.fencingToken);
        if (context.waitedMs !== undefined) {
          current.setAttribute('relock.waited_ms', context.waitedMs);
          waited.record(context.waitedMs, attributes);
        }
        counters.acquires.add(1, attributes);
      } else {
        counters.releases.add(1, attributes);
      }
      current.end(now());
    };
    const handlers = {
      start(message: unknown) {
        const context = message as AcquireTraceContext;
        open.set(
          context,
          sink.startSpan(span(channelName), {
            startTime: now(),
            attributes: { 'relock.name': context.name, 'relock.kind': context.kind, 'relock.client_id': context.clientId },
          }),
        );
      },
      // The synchronous part ended; only a synchronous throw (an `error` before it) ends the span here.
      end(message: unknown) {
        const context = message as AcquireTraceContext & { error?: unknown };
        if (context.error !== undefined) finish(context);
      },
      asyncStart() {},
      asyncEnd(message: unknown) {
        finish(message as AcquireTraceContext);
      },
      error() {},
    };
    const channel = tracingChannel(channelName);
    channel.subscribe(handlers);
    unsubscribers.push(() => void channel.unsubscribe(handlers));
  }

  const plain: [string, (message: unknown) => void][] = [
    ['relock:lost', (message) => counters.lost.add(1, { 'relock.name': (message as LostMessage).name, 'error.type': errorType((message as LostMessage).error) })],
    ['relock:renew', (message) => counters.renewed.add((message as RenewMessage).names.length)],
    ['relock:wake', (message) => counters.wakes.add(1, { 'relock.name': (message as WakeMessage).name })],
  ];
  for (const [name, listener] of plain) {
    subscribe(name, listener);
    unsubscribers.push(() => void unsubscribe(name, listener));
  }
  return () => {
    for (const stop of unsubscribers) stop();
  };
}

/** A relock error's `code` (`ERR_LOCK_TIMEOUT`, ...), else the error's name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'Error');
}

/** A span as the in-memory sink keeps it. */
export interface RecordedSpan {
  readonly name: string;
  readonly startTime: number;
  endTime: number | undefined;
  readonly attributes: Attributes;
  status: { code: number; message?: string } | undefined;
}

/** One `add()` or `record()` call. */
export interface RecordedPoint {
  readonly name: string;
  readonly value: number;
  readonly attributes: Attributes;
}

/** A sink that keeps everything in arrays: for tests, or to look at what relock reports. */
export function memorySink(): Sink & { spans: RecordedSpan[]; points: RecordedPoint[]; total(name: string): number } {
  const spans: RecordedSpan[] = [];
  const points: RecordedPoint[] = [];
  const instrument = (name: string) => (value: number, attributes: Attributes = {}) => void points.push({ name, value, attributes });
  return {
    spans,
    points,
    total: (name) => points.filter((point) => point.name === name).reduce((sum, point) => sum + point.value, 0),
    startSpan(name, options) {
      const recorded: RecordedSpan = { name, startTime: options.startTime, endTime: undefined, attributes: { ...options.attributes }, status: undefined };
      spans.push(recorded);
      return {
        setAttribute: (key, value) => void (recorded.attributes[key] = value),
        setStatus: (status) => void (recorded.status = status),
        end: (endTime) => void (recorded.endTime = endTime ?? now()),
      };
    },
    counter: (name) => ({ add: instrument(name) }),
    histogram: (name) => ({ record: instrument(name) }),
  };
}
