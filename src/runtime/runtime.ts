// The runtime a primitive gets from its client: the script runner, the waiting room (with the
// subscriber behind it), the watchdog, the async context, and the client's lifecycle. A primitive
// reaches Redis only through it.
import { randomUUID } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import { debuglog } from 'node:util';
import { LockError, type LockLostError } from '../errors.ts';
import type { ClientTraits } from '../diagnostics.ts';
import type { RedisPort, SubscriberConnection } from '../port/port.ts';
import { Context } from './context.ts';
import { errorMessage, ScriptRunner, SHARDED_PUBLISH } from './script.ts';
import { clusterTransport } from './cluster.ts';
import { shardTransport } from './shards.ts';
import { keySlot } from '../port/slot.ts';
import { connectionTransport, Subscriber, type TransportFactory } from './subscriber.ts';
import { systemClock, type Clock } from './waiter.ts';
import { isUnreachable } from './wait-errors.ts';
import { WaitingRoom } from './waiting.ts';
import { backoffMs, onAbort } from './waits.ts';
import { Watchdog } from './watchdog.ts';

const log = debuglog('relock:runtime');

export interface RuntimeOptions {
  readonly clientId: string;
  readonly leaseMs: number;
  readonly fenceTtlMs: number;
  /** The client's `maxHoldMs`: how long a hold may last when its acquire sets none (undefined: no bound). */
  readonly maxHoldMs?: number | undefined;
  /** The command connection (on a Redlock client, the first master's). */
  readonly port: RedisPort;
  /** Opens the subscriber connection at the first wait (default: the port's; a Redlock client's fans out over its masters). */
  readonly openSubscriber?: (() => SubscriberConnection) | undefined;
  /** Replicas that must acknowledge a first acquisition (WAIT), 0 for none. */
  readonly replicas?: number | undefined;
  /** How long that WAIT may take, in milliseconds. */
  readonly replicaTimeoutMs?: number | undefined;
  /** Where 'error' and 'warning' events go (the LockClient). */
  readonly events: EventEmitter;
  /** Every server's command connection and host:port, each checked for its eviction policy (default: `port` alone). */
  readonly servers?: readonly { readonly port: RedisPort; readonly label: string }[] | undefined;
  /** Several servers decide each attempt together (`port` is one of them): see `Runtime.joint`. */
  readonly joint?: JointDecision | undefined;
  readonly clock?: Clock | undefined;
  /**
   * Owner fields `<clientId>:<n>`, n a decimal counter (the shape of Redisson's `<uuid>:<threadId>`),
   * instead of `<clientId>:<uuid>`. @default false
   */
  readonly numberedOwners?: boolean | undefined;
}

/**
 * How a runtime whose servers decide each attempt together treats an attempt still out: `runner` is
 * one server's, so its state tells nothing of the decision; a rejected wait settles only after that
 * attempt's undo, and an attempt unanswered when the wait ends is a decision the servers did not
 * reach in time.
 */
export interface JointDecision {
  /** The error of a wait on `lockName` that ended with its last attempt still undecided (`failed`: 'Lock "x" was not acquired'). */
  unanswered(failed: string, waitMs: number, cause: unknown, lockName: string): LockError;
}

/**
 * A subscriber connection to one master of a Cluster, at random among those it knows; none known
 * (not connected yet, or every node lost) is an error, never a guess at some other server.
 */
function anyMaster(port: RedisPort): SubscriberConnection {
  const masters = port.topology?.masters() ?? [];
  const node = masters[Math.floor(Math.random() * masters.length)];
  if (node === undefined) {
    throw new LockError('Redis could not be reached: the Cluster knows no master to subscribe on', { code: 'ERR_LOCK_UNREACHABLE' });
  }
  return port.openNode(node.host, node.port);
}

/**
 * How the waiters hear releases: one subscriber connection on one server (or a Redlock quorum's fan
 * out); on a Cluster, sharded pub/sub when the servers have it, else one SUBSCRIBE connection.
 */
function transportOf(port: RedisPort, sharded: () => Promise<boolean>, openSubscriber: () => SubscriberConnection): TransportFactory {
  if (port.cluster && port.routesPubSub) {
    // The client's own subscriber finds each channel's shard and follows slot moves (GLIDE): one connection.
    return clusterTransport(sharded, connectionTransport(openSubscriber, false, true), connectionTransport(openSubscriber));
  }
  if (!port.cluster || !port.topology) return connectionTransport(openSubscriber);
  return clusterTransport(
    sharded,
    shardTransport(port.topology, (host, nodePort) => port.openNode(host, nodePort)),
    // Without sharded pub/sub: one connection to any master, replaced when it ends (ioredis's own
    // Cluster subscriber moves silently, and what was published meanwhile would go unnoticed).
    connectionTransport(() => anyMaster(port), true),
  );
}

export class Runtime {
  readonly clientId: string;
  readonly leaseMs: number;
  /** The client's `maxHoldMs` (undefined: no bound). */
  readonly maxHoldMs: number | undefined;
  readonly fenceTtlMs: number;
  /** The topology and layout the diagnostics channels tell of (made once). */
  readonly traits: ClientTraits;
  /** A Cluster: one slot per script call, so renewals are batched per slot. */
  readonly cluster: boolean;
  /** The command a release publishes with: SPUBLISH on a Cluster (the runner falls back to PUBLISH where it is missing). */
  readonly publish: string;
  /** Replicas that must acknowledge a first acquisition (WAIT); 0: none. */
  readonly replicas: number;
  readonly replicaTimeoutMs: number;
  readonly runner: ScriptRunner;
  readonly waiting: WaitingRoom;
  readonly watchdog: Watchdog;
  readonly context = new Context();
  /** Set when several servers decide each attempt together (see JointDecision). */
  readonly joint: JointDecision | undefined;
  /** The acquires under way: close() aborts them all. */
  readonly pending = new Set<{ abort(reason: unknown): void }>();
  readonly #closer = new AbortController();
  readonly #servers: readonly { readonly port: RedisPort; readonly label?: string }[];
  readonly #events: EventEmitter;
  readonly #subscriber: Subscriber;
  #used = false;
  #warnedSelfWait = false;
  /** The last owner number given, with numberedOwners; undefined: random owners. */
  #owners: number | undefined;

  constructor(options: RuntimeOptions) {
    this.clientId = options.clientId;
    this.leaseMs = options.leaseMs;
    this.fenceTtlMs = options.fenceTtlMs;
    this.maxHoldMs = options.maxHoldMs;
    this.#owners = options.numberedOwners ? 0 : undefined;
    const { port } = options;
    this.#servers = options.servers ?? [{ port }];
    this.joint = options.joint;
    this.#events = options.events;
    this.cluster = port.cluster;
    this.traits = { topology: this.joint ? 'redlock' : this.cluster ? 'cluster' : 'single', layout: options.numberedOwners ? 'redisson' : 'relock' };
    this.publish = this.cluster ? SHARDED_PUBLISH : 'publish';
    this.replicas = options.replicas ?? 0;
    this.replicaTimeoutMs = options.replicaTimeoutMs ?? 1_000;
    const onError = (error: Error) => this.error(error);
    this.runner = new ScriptRunner(port, this.#closer.signal);
    this.waiting = new WaitingRoom(this.clientId);
    const transport = transportOf(port, () => this.runner.sharded(), options.openSubscriber ?? (() => port.openSubscriber()));
    this.#subscriber = new Subscriber(transport, this.waiting, onError);
    this.waiting.attach(this.#subscriber);
    this.watchdog = new Watchdog({
      leaseMs: this.leaseMs,
      clientId: this.clientId,
      onError,
      clock: options.clock ?? systemClock,
      slotOf: this.cluster ? keySlot : undefined,
    });
  }

  /** A new owner field, never given before by this client: `<clientId>:<uuid>`, or `<clientId>:<n>`. */
  newOwner(): string {
    return this.#owners === undefined ? `${this.clientId}:${randomUUID()}` : `${this.clientId}:${++this.#owners}`;
  }

  /**
   * After a first acquisition of `key`, with `replicas` set: waits (WAIT) until that many replicas
   * have it, or rejects with `ERR_LOCK_REPLICATION` when fewer did within `replicaTimeoutMs`.
   */
  async replicate(key: string, name: string): Promise<void> {
    const acknowledged = await this.runner.waitReplicas(key, this.replicas, this.replicaTimeoutMs).catch((error: unknown) => {
      // A server (or service) without WAIT cannot sync replicas: say so, with its own code.
      if (!/unknown command/i.test(errorMessage(error))) throw error;
      throw new LockError(`Lock "${name}": \`replicas\` needs the WAIT command, which this server does not have (a managed service may block it): the lock was given back; use replicas: 0 there`, {
        cause: error,
        lockName: name,
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    });
    if (acknowledged >= this.replicas) return;
    throw new LockError(
      `Lock "${name}" was acquired, but only ${acknowledged} of the ${this.replicas} replicas required acknowledged it within ${this.replicaTimeoutMs} ms: it was given back`,
      { lockName: name, code: 'ERR_LOCK_REPLICATION' },
    );
  }

  /**
   * Sends `send` until it lands, for what nobody else will send (a give-back, a whole release that
   * ended renewal): at the next 'ready' of a connection, or after a backoff (100 ms to 1 s) at the
   * latest, and again after each failure for want of a connection, while the watchdog's clock is
   * before `untilMs` (when what it gives back ends on Redis by itself) and the client is open. Its
   * first sending, which just failed so, is the caller's.
   */
  resend(send: () => Promise<unknown>, untilMs: number): void {
    const { clock } = this.watchdog;
    let failures = 0;
    let timer: NodeJS.Timeout | undefined;
    let sending = false;
    /** A 'ready' came while a sending was out: try again as soon as it fails. */
    let readyMeanwhile = false;
    const stop = () => {
      clearTimeout(timer);
      for (const unlisten of unlistens) unlisten();
      unclose();
    };
    const later = () => {
      timer = setTimeout(go, Math.max(0, Math.min(backoffMs(failures++), untilMs - clock.now()))).unref();
    };
    const go = () => {
      clearTimeout(timer);
      if (this.closed.aborted || clock.now() >= untilMs) return stop();
      sending = true;
      readyMeanwhile = false;
      send().then(stop, (error: unknown) => {
        sending = false;
        if (!isUnreachable(error)) return stop();
        if (readyMeanwhile) return go();
        later();
      });
    };
    const ready = () => (sending ? (readyMeanwhile = true) : go());
    const unlistens = this.#servers.map(({ port }) => port.onReady(ready));
    const unclose = onAbort(this.closed, stop);
    later();
  }

  /** Aborted by close(), with the error pending waits reject with. */
  get closed(): AbortSignal {
    return this.#closer.signal;
  }

  /** Reports an error: an 'error' event when someone listens, else only the debug log. */
  error(error: Error): void {
    log('%s', error.message);
    if (this.#events.listenerCount('error') > 0) this.#events.emit('error', error);
  }

  warn(warning: LockError): void {
    log('%s', warning.message);
    this.#events.emit('warning', warning);
  }

  /** Called before every acquire; checks the server once, beside the first one. */
  firstUse(): void {
    if (this.#used) return;
    this.#used = true;
    this.#checkEviction();
  }

  /**
   * Once per client: an acquire has waited longer than a lease for a lock this client holds. That is
   * the `await using` trap: the holder's context is not the waiter's, so it cannot re-enter.
   */
  warnSelfWait(name: string): void {
    if (this.#warnedSelfWait) return;
    this.#warnedSelfWait = true;
    const warning = new LockError(
      `An acquire of lock "${name}" has waited longer than the lease (${this.leaseMs} ms) while this LockClient itself holds that lock: ` +
        'a nested acquire re-enters only inside the holder\'s context (runExclusive, or lease.run()), not after `await using lease = await lock.acquire()`. ' +
        'Wrap the nested code in lease.run(() => ...).',
      { lockName: name, code: 'ERR_LOCK_SELF_WAIT' },
    );
    this.warn(warning);
    process.emitWarning(warning.message, { type: 'RelockWarning', code: warning.code });
  }

  /**
   * An evicted lock key is a lock silently lost: warn when the server's maxmemory-policy may evict
   * keys with a TTL (every lock key has one). A server that refuses CONFIG (ACL, managed Redis) is
   * not second-guessed.
   */
  #checkEviction(): void {
    if (this.cluster) return;
    // Redlock: every master, each warning naming its server (an evicted key on one master weakens every quorum).
    for (const { port, label } of this.#servers) {
      port.command('config', ['GET', 'maxmemory-policy'], false).then(
        (reply) => {
          // RESP2 answers [name, value]; RESP3 a map.
          const policy = String((Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.['maxmemory-policy']) ?? '');
          if (policy === '' || policy === 'noeviction') return;
          this.warn(
            new LockError(
              `Redis maxmemory-policy is "${policy}"${label ? ` on ${label}` : ''}: under memory pressure Redis may evict lock keys, and an evicted lock is silently lost. Use "noeviction" on the Redis that holds locks.`,
              { code: 'ERR_LOCK_EVICTION_POLICY' },
            ),
          );
        },
        (error: Error) => log('CONFIG GET maxmemory-policy failed%s: %s', label ? ` on ${label}` : '', error.message),
      );
    }
  }

  /** Ends every pending wait with `reason`, stops the watchdog and the subscriber. */
  close(reason: Error, lost: LockLostError): void {
    this.#closer.abort(reason);
    for (const stop of this.pending) stop.abort(reason);
    this.watchdog.stop(lost);
    this.#subscriber.close();
  }
}
