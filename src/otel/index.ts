/**
 * OpenTelemetry for relock: {@link RelockInstrumentation} turns relock's `node:diagnostics_channel`
 * events into spans and metrics, in the shape of the `@opentelemetry/instrumentation-*` packages.
 * Needs `@opentelemetry/api` (an optional peer dependency of relock). See docs/diagnostics.md.
 *
 * @module relock/otel
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { channel, tracingChannel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import {
  context as otelContext,
  metrics,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type MeterProvider,
  type ObservableResult,
  type Span,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import type { AcquireTraceContext, LostMessage, RenewMessage } from '../diagnostics.ts';
import type { Lease } from '../api.ts';

/** The instrumentation's name: its tracer's and meter's (the instrumentation scope). */
export const INSTRUMENTATION_NAME = 'relock';
/** The instrumentation scope's version: the relock release it ships in. */
export const INSTRUMENTATION_VERSION = '0.1.0';

/**
 * Options of {@link RelockInstrumentation}; `getConfig()` returns them with `enabled` filled in.
 */
export interface RelockInstrumentationConfig {
  /**
   * Whether the constructor enables it, as every OpenTelemetry instrumentation does; `NodeSDK`
   * (`registerInstrumentations`) enables one made with `enabled: false` when it starts.
   * @default true
   */
  enabled?: boolean;
  /**
   * The lock name to put on spans as `relock.lock.name`, or undefined for none. Lock names often
   * carry ids (`order:4711`): the default keeps every name out of telemetry. Metrics never carry
   * the name, whatever this returns.
   * @default () => undefined
   */
  lockName?: (name: string) => string | undefined;
}

/** What an acquire becomes: the value of `relock.lock.result`. */
export type AcquireResult = 'acquired' | 'busy' | 'timeout' | 'aborted' | 'error';

/** The metric instruments, made from one meter (the observable ones report the tallies). */
interface Instruments {
  readonly leaseDuration: Histogram;
  readonly acquireDuration: Histogram;
  readonly lostLeases: Counter;
  readonly renewals: Counter;
  readonly wakeups: Counter;
}

/**
 * Values kept in this process by attribute set and reported when the SDK collects, through an
 * observable instrument: an acquire or release adds to a number, and no attribute set is hashed on
 * its way (the SDK hashes the attributes of every synchronous measurement).
 */
class Tally {
  readonly #points = new Map<string, { readonly attributes: Attributes; value: number }>();

  add(key: string, attributes: Attributes, by: number): void {
    const point = this.#points.get(key);
    if (point) point.value += by;
    else this.#points.set(key, { attributes, value: by });
  }

  readonly observe = (result: ObservableResult): void => {
    for (const { attributes, value } of this.#points.values()) result.observe(value, attributes);
  };
}

/** The tallies behind the observable instruments. */
interface Tallies {
  readonly activeLeases: Tally;
  readonly pendingAcquires: Tally;
  readonly acquires: Tally;
}

/** The metrics' names (docs/diagnostics.md has them as a table). */
export const METRICS = {
  /** UpDownCounter `{lease}`: leases held now (re-entries not counted). */
  activeLeases: 'relock.lock.active_leases',
  /** Histogram `s`: how long a lease was held, by `relock.lease.outcome` (released, lost). */
  leaseDuration: 'relock.lock.lease.duration',
  /** UpDownCounter `{acquire}`: acquire calls under way now. */
  pendingAcquires: 'relock.lock.pending_acquires',
  /** Histogram `s`: how long an acquire call took, waiting included, by `relock.lock.result`. */
  acquireDuration: 'relock.lock.acquire.duration',
  /** Counter `{acquire}`: acquire calls ended, by `relock.lock.result`. */
  acquires: 'relock.lock.acquires',
  /** Counter `{lease}`: leases lost while held. */
  lostLeases: 'relock.lock.lost_leases',
  /** Counter `{lease}`: lease renewals by the watchdog. */
  renewals: 'relock.lock.renewals',
  /** Counter `{wakeup}`: release messages that reached this process's waiters. */
  wakeups: 'relock.lock.wakeups',
} as const;

/**
 * The histograms' bucket boundaries, in seconds (advice: a View of the SDK overrides them). The SDK's
 * default boundaries (0, 5, 10, 25 … 10000) suit milliseconds: in seconds they put every wait and
 * hold under 5 s in one bucket. These are those of OpenTelemetry's HTTP durations and ASP.NET Core's
 * lease metrics (5 ms to 10 s), extended to 5 minutes for long holds.
 */
const SECONDS_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 30, 60, 120, 300];

function instruments(meter: Meter, tallies: Tallies): Instruments {
  const advice = { explicitBucketBoundaries: SECONDS_BUCKETS };
  meter.createObservableUpDownCounter(METRICS.activeLeases, { unit: '{lease}', description: 'Leases held now by this process (re-entries not counted).' }).addCallback(tallies.activeLeases.observe);
  meter.createObservableUpDownCounter(METRICS.pendingAcquires, { unit: '{acquire}', description: 'Acquire calls under way now: attempting or waiting for the lock.' }).addCallback(tallies.pendingAcquires.observe);
  meter.createObservableCounter(METRICS.acquires, { unit: '{acquire}', description: 'Acquire calls ended, by result: acquired, busy, timeout, aborted, error.' }).addCallback(tallies.acquires.observe);
  return {
    leaseDuration: meter.createHistogram(METRICS.leaseDuration, { unit: 's', description: 'How long a lease was held: from its acquire to its release or loss.', advice }),
    acquireDuration: meter.createHistogram(METRICS.acquireDuration, { unit: 's', description: 'How long an acquire call took, waiting included, by its result.', advice }),
    lostLeases: meter.createCounter(METRICS.lostLeases, { unit: '{lease}', description: 'Leases lost while held: their lease.signal aborted.' }),
    renewals: meter.createCounter(METRICS.renewals, { unit: '{lease}', description: 'Lease renewals by the watchdog.' }),
    wakeups: meter.createCounter(METRICS.wakeups, { unit: '{wakeup}', description: "Release messages that reached this process's waiters." }),
  };
}

/** One acquire call's state, from its `start` to its `asyncEnd`. */
interface Acquiring {
  readonly span: Span;
  /** The attributes' key in the tallies (kind, topology, layout). */
  readonly key: string;
  /** The caller's context: the hold span's parent. */
  readonly parent: Context;
  readonly startedAt: number;
  readonly attributes: Attributes;
}

/** One lease's hold span, from its acquire to its release or loss. */
interface Holding {
  readonly span: Span;
  readonly startedAt: number;
  readonly attributes: Attributes;
  readonly key: string;
  /** Where #lost finds it: client, name and fencing token (a multi-lock's lease: its signal instead). */
  readonly lostKey: string | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

type Traced = AcquireTraceContext & { error?: unknown; result?: unknown };

const acquireChannel = tracingChannel<unknown, object>('relock:acquire');
const releaseChannel = tracingChannel<unknown, object>('relock:release');
const renewChannel = channel('relock:renew');
const lostChannel = channel('relock:lost');
const wakeChannel = channel('relock:wake');

const noop = (): void => undefined;
const seconds = (fromMs: number) => (performance.now() - fromMs) / 1000;

/** A relock error's `code` (`ERR_LOCK_TIMEOUT`, ...), else the error's name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : 'Error';
}

function resultOf(traced: Traced): AcquireResult {
  if (!('error' in traced)) return 'acquired';
  const type = errorType(traced.error);
  if (type === 'ERR_LOCK_TIMEOUT') return traced.tryAcquire ? 'busy' : 'timeout';
  if (type === 'AbortError' || type === 'TimeoutError' || type === 'ABORT_ERR') return 'aborted';
  return 'error';
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The AsyncLocalStorage of the global context manager when it is OpenTelemetry's
 * `AsyncLocalStorageContextManager` (what `NodeSDK` and `NodeTracerProvider` register on Node 20+),
 * else undefined. Neither the API's `_getContextManager()` nor the manager's `_asyncLocalStorage` is
 * public: with another context manager relock's spans are made but not active while it runs.
 */
function contextStorage(): AsyncLocalStorage<Context> | undefined {
  const manager = (otelContext as unknown as { _getContextManager?: () => unknown })._getContextManager?.();
  const storage = (manager as { _asyncLocalStorage?: unknown } | undefined)?._asyncLocalStorage;
  return storage instanceof AsyncLocalStorage ? (storage as AsyncLocalStorage<Context>) : undefined;
}

/**
 * relock's OpenTelemetry instrumentation: spans for acquires, holds and releases, and lease metrics
 * in seconds, from relock's `node:diagnostics_channel` channels (process-wide: every `LockClient`,
 * in ESM and CommonJS alike). While disabled it subscribes to nothing, so relock builds no trace
 * context and reads no clock.
 *
 * It implements the `Instrumentation` interface of `@opentelemetry/instrumentation` structurally
 * (without depending on that package): `NodeSDK({ instrumentations: [...] })` and
 * `registerInstrumentations()` take it as they take the others. It patches no module, so it works
 * whether it is made before or after relock is loaded.
 *
 * - `relock.acquire`: one span per `acquire()`, `tryAcquire()` and `runExclusive()` call, the
 *   active span while relock sends its commands, so a Redis client's instrumentation nests its
 *   command spans under it (with OpenTelemetry's `AsyncLocalStorageContextManager`, the default).
 * - `relock.hold`: from an acquire to the release or loss of its lease, linked to its acquire span,
 *   a child of the caller's span; a lost lease ends it with a `relock.lock.lost` event and status
 *   ERROR.
 * - `relock.release`: one span per `release()`, active while its commands run.
 *
 * @example
 * ```ts
 * import { NodeSDK } from '@opentelemetry/sdk-node';
 * import { RelockInstrumentation } from 'relock/otel';
 *
 * const sdk = new NodeSDK({ instrumentations: [new RelockInstrumentation()] });
 * sdk.start();
 * ```
 */
export class RelockInstrumentation {
  /** The instrumentation scope's name, `relock`. */
  readonly instrumentationName = INSTRUMENTATION_NAME;
  /** The instrumentation scope's version. */
  readonly instrumentationVersion = INSTRUMENTATION_VERSION;

  #config: RelockInstrumentationConfig & { enabled: boolean };
  #tracer: Tracer;
  #metrics: Instruments;
  #enabled = false;
  /** The store the acquire and release channels are bound to, while enabled. */
  #storage: AsyncLocalStorage<Context> | undefined;
  readonly #acquiring = new WeakMap<object, Acquiring>();
  readonly #releasing = new WeakMap<object, Span>();
  readonly #holding = new WeakMap<Lease, Holding>();
  /** The open hold spans of leases over one hold, by client, name and token: a loss comes on `relock:lost`. */
  readonly #holdingByToken = new Map<string, Lease>();
  readonly #tallies: Tallies = { activeLeases: new Tally(), pendingAcquires: new Tally(), acquires: new Tally() };

  readonly #acquireSubscribers: TracingChannelSubscribers<object>;
  readonly #releaseSubscribers: TracingChannelSubscribers<object>;
  readonly #onRenew = (message: unknown) => this.#metrics.renewals.add((message as RenewMessage).names.length);
  readonly #onWake = () => this.#metrics.wakeups.add(1);
  readonly #onLost = (message: unknown) => {
    const { clientId, name, fencingToken, error } = message as LostMessage;
    const lease = this.#holdingByToken.get(`${clientId}\n${name}\n${fencingToken}`);
    if (lease) this.#endHold(lease, 'lost', error);
  };
  readonly #openAcquire = (message: object) => this.#startAcquire(message as Traced);
  readonly #openRelease = (message: object) => this.#startRelease(message as Traced);

  /**
   * @param config see {@link RelockInstrumentationConfig}; enabled at once unless `enabled: false`.
   * @throws {TypeError} when `lockName` is given and is not a function.
   */
  constructor(config: RelockInstrumentationConfig = {}) {
    this.#config = RelockInstrumentation.#checked(config);
    this.#tracer = trace.getTracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION);
    this.#metrics = instruments(metrics.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION), this.#tallies);
    this.#acquireSubscribers = {
      // With a bound store the span is open already (the store's transform ran first): only look
      // whether the global context manager changed since, for the next call.
      start: (message) => (this.#acquiring.has(message) ? this.#bindStorage() : void this.#startAcquire(message as Traced)),
      end: noop,
      asyncStart: noop,
      asyncEnd: (message) => this.#endAcquire(message as Traced),
      error: noop,
    };
    this.#releaseSubscribers = {
      start: (message) => (this.#releasing.has(message) ? undefined : void this.#startRelease(message as Traced)),
      end: noop,
      asyncStart: noop,
      asyncEnd: (message) => this.#endRelease(message as Traced),
      error: noop,
    };
    if (this.#config.enabled) this.enable();
  }

  static #checked(config: RelockInstrumentationConfig): RelockInstrumentationConfig & { enabled: boolean } {
    if (typeof config !== 'object' || config === null) throw new TypeError(`Expected \`config\` to be an object, got ${config === null ? 'null' : typeof config}`);
    if (config.lockName !== undefined && typeof config.lockName !== 'function') {
      throw new TypeError(`Expected \`lockName\` to be a function (name) => string | undefined, got ${typeof config.lockName}`);
    }
    return { ...config, enabled: config.enabled ?? true };
  }

  /** Subscribes to relock's channels. Calling it while enabled does nothing. */
  enable(): void {
    if (this.#enabled) return;
    this.#enabled = true;
    acquireChannel.subscribe(this.#acquireSubscribers);
    releaseChannel.subscribe(this.#releaseSubscribers);
    renewChannel.subscribe(this.#onRenew);
    wakeChannel.subscribe(this.#onWake);
    lostChannel.subscribe(this.#onLost);
    this.#bindStorage();
    // NodeSDK.start() enables its instrumentations before it registers its context manager, in
    // the same synchronous call: look again once it has returned.
    queueMicrotask(() => this.#bindStorage());
  }

  /**
   * Unsubscribes from every channel: relock runs as if nobody listened. An acquire or release under
   * way at that moment is left with its span unended and `pending_acquires` not taken back; a hold
   * span open then still ends at its lease's loss, not at its release.
   */
  disable(): void {
    if (!this.#enabled) return;
    this.#enabled = false;
    this.#unbindStorage();
    acquireChannel.unsubscribe(this.#acquireSubscribers);
    releaseChannel.unsubscribe(this.#releaseSubscribers);
    renewChannel.unsubscribe(this.#onRenew);
    wakeChannel.unsubscribe(this.#onWake);
    lostChannel.unsubscribe(this.#onLost);
  }

  /** Uses this provider's tracer (by default the global one, `trace.getTracerProvider()`). */
  setTracerProvider(tracerProvider: TracerProvider): void {
    this.#tracer = tracerProvider.getTracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION);
  }

  /** Makes the instruments from this provider's meter (by default the global one at construction). */
  setMeterProvider(meterProvider: MeterProvider): void {
    this.#metrics = instruments(meterProvider.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION), this.#tallies);
  }

  /** The configuration, with `enabled` filled in. */
  getConfig(): RelockInstrumentationConfig {
    return { ...this.#config };
  }

  /**
   * Replaces the configuration (`lockName` applies to spans started from now on). Like the other
   * instrumentations, it does not enable or disable: call `enable()` or `disable()` for that.
   * @throws {TypeError} when `lockName` is given and is not a function.
   */
  setConfig(config: RelockInstrumentationConfig = {}): void {
    this.#config = RelockInstrumentation.#checked(config);
  }

  /** Binds the acquire and release channels to the context manager's storage, when it has one (and it changed). */
  #bindStorage(): void {
    if (!this.#enabled) return;
    const storage = contextStorage();
    if (storage === this.#storage) return;
    this.#unbindStorage();
    if (storage === undefined) return;
    this.#storage = storage;
    // Called by relock's tracePromise before `start` is published, in the caller's context: the
    // span it opens becomes the active context for the whole acquire (or release).
    acquireChannel.start.bindStore(storage, (message) => this.#openAcquire(message as object));
    releaseChannel.start.bindStore(storage, (message) => this.#openRelease(message as object));
  }

  #unbindStorage(): void {
    if (this.#storage === undefined) return;
    acquireChannel.start.unbindStore(this.#storage);
    releaseChannel.start.unbindStore(this.#storage);
    this.#storage = undefined;
  }

  #nameAttributes(name: string, attributes: Attributes): Attributes {
    const shown = this.#config.lockName?.(name);
    return typeof shown === 'string' ? { ...attributes, 'relock.lock.name': shown } : attributes;
  }

  /** Opens the acquire span (once per call) and returns the context that makes it active. */
  #startAcquire(traced: Traced): Context {
    const open = this.#acquiring.get(traced);
    if (open) return trace.setSpan(open.parent, open.span);
    // Without a bound store (another context manager), this runs from `start`; look again for the next call.
    if (this.#storage === undefined) this.#bindStorage();
    const parent = otelContext.active();
    const attributes: Attributes = { 'relock.lock.kind': traced.kind };
    if (traced.topology !== undefined) attributes['relock.lock.topology'] = traced.topology;
    if (traced.layout !== undefined) attributes['relock.lock.layout'] = traced.layout;
    const span = this.#tracer.startSpan('relock.acquire', { attributes: this.#nameAttributes(traced.name, attributes) }, parent);
    const key = `${traced.kind}\n${traced.topology}\n${traced.layout}`;
    this.#acquiring.set(traced, { span, parent, startedAt: performance.now(), attributes, key });
    this.#tallies.pendingAcquires.add(key, attributes, 1);
    return trace.setSpan(parent, span);
  }

  #endAcquire(traced: Traced): void {
    const open = this.#acquiring.get(traced);
    if (!open) return;
    this.#acquiring.delete(traced);
    const { span, attributes, key } = open;
    const result = resultOf(traced);
    const measured: Attributes = { ...attributes, 'relock.lock.result': result };
    span.setAttribute('relock.lock.result', result);
    let type = '';
    if (result !== 'acquired' && result !== 'busy') {
      type = errorType(traced.error);
      measured['error.type'] = type;
      span.setAttribute('error.type', type);
      span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(traced.error) });
    }
    this.#tallies.pendingAcquires.add(key, attributes, -1);
    this.#metrics.acquireDuration.record(seconds(open.startedAt), measured);
    this.#tallies.acquires.add(`${key}\n${result}\n${type}`, measured, 1);
    span.end();
    if (result === 'acquired') this.#startHold(traced.result as Lease, open, traced.clientId);
  }

  /**
   * A hold span for a lease that is not a re-entry, ended by its release or its loss: a loss of its
   * hold on `relock:lost` (its signal is never asked for: a lease makes one only when asked), a
   * multi-lock's lease by its signal.
   */
  #startHold(lease: Lease, acquiring: Acquiring, clientId: string): void {
    if (lease === undefined || lease === null || lease.holdCount !== 1) return;
    const { attributes, key } = acquiring;
    const span = this.#tracer.startSpan(
      'relock.hold',
      { attributes: this.#nameAttributes(lease.name, attributes), links: [{ context: acquiring.span.spanContext() }] },
      acquiring.parent,
    );
    const overOne = !('members' in lease);
    const lostKey = overOne ? `${clientId}\n${lease.name}\n${lease.fencingToken}` : undefined;
    const signal = overOne ? undefined : lease.signal;
    const onAbort = () => this.#endHold(lease, 'lost', signal?.reason);
    this.#holding.set(lease, { span, startedAt: performance.now(), attributes, key, lostKey, signal, onAbort });
    this.#tallies.activeLeases.add(key, attributes, 1);
    if (lostKey !== undefined) this.#holdingByToken.set(lostKey, lease);
    else if (signal!.aborted) onAbort();
    else signal!.addEventListener('abort', onAbort, { once: true });
  }

  #endHold(lease: Lease, outcome: 'released' | 'lost', error?: unknown): void {
    const holding = this.#holding.get(lease);
    if (!holding) return;
    this.#holding.delete(lease);
    if (holding.lostKey !== undefined) this.#holdingByToken.delete(holding.lostKey);
    holding.signal?.removeEventListener('abort', holding.onAbort);
    const { span, attributes, key } = holding;
    const measured: Attributes = { ...attributes, 'relock.lease.outcome': outcome };
    span.setAttribute('relock.lease.outcome', outcome);
    if (outcome === 'lost') {
      const type = errorType(error);
      span.addEvent('relock.lock.lost', { 'error.type': type, 'exception.type': type, 'exception.message': messageOf(error) });
      span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(error) });
      this.#metrics.lostLeases.add(1, { ...attributes, 'error.type': type });
    }
    this.#tallies.activeLeases.add(key, attributes, -1);
    this.#metrics.leaseDuration.record(seconds(holding.startedAt), measured);
    span.end();
  }

  #startRelease(traced: Traced): Context {
    const parent = otelContext.active();
    const open = this.#releasing.get(traced);
    if (open) return trace.setSpan(parent, open);
    if (this.#storage === undefined) this.#bindStorage();
    const span = this.#tracer.startSpan('relock.release', { attributes: this.#nameAttributes(traced.name, { 'relock.lock.kind': traced.kind }) }, parent);
    this.#releasing.set(traced, span);
    return trace.setSpan(parent, span);
  }

  #endRelease(traced: Traced): void {
    const span = this.#releasing.get(traced);
    if (span) {
      this.#releasing.delete(traced);
      if ('error' in traced) {
        span.setAttribute('error.type', errorType(traced.error));
        span.setStatus({ code: SpanStatusCode.ERROR, message: messageOf(traced.error) });
      }
      span.end();
    }
    // A release that went through ends the hold; one that failed leaves it to a retry or to its loss.
    if (traced.lease !== undefined && !('error' in traced)) this.#endHold(traced.lease, 'released');
  }
}
