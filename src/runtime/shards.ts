// Sharded pub/sub on a Redis Cluster: one subscriber connection per master that serves a channel
// someone waits on, SSUBSCRIBE routed by the channel's slot. A slot that moved (the server's
// unsolicited SUNSUBSCRIBE, a MOVED reply) or a shard connection that closed (failover, a killed
// connection) sends that shard's channels to wherever their slots are served now, and then every
// waiter retries: what was published meanwhile is lost. Waiters never depend on it alone: each
// sleeps at most the lease it saw.
import { debuglog } from 'node:util';
import type { SubscriberConnection, Topology } from '../port/port.ts';
import { errorMessage, isNotServing } from './script.ts';
import { keySlot } from '../port/slot.ts';
import type { Transport, TransportEvents, TransportFactory } from './subscriber.ts';

const log = debuglog('relock:subscriber');

/** How long a new subscription keeps trying (slot moves, a failover under way) before it fails. */
const SUBSCRIBE_BUDGET_MS = 5_000;
/** How long one SSUBSCRIBE may go unanswered before its shard connection counts as broken. */
const ANSWER_MS = 2_000;
/**
 * How often the slot map is read again while there are channels: a channel whose node no longer
 * serves its slot moves. A failover leaves the old master's subscriptions in place (a replica takes
 * SSUBSCRIBE and hears SPUBLISH too), where the new master's receiver count never sees them.
 */
const PLACEMENT_MS = 1_000;
/** Every how many placement checks each shard connection with channels is PINGed (every 3 s): a frozen or cut-off master is noticed by its silence. */
const PING_EVERY = 3;
/** How long a shard connection with no channel stays open for the next waiter. */
const IDLE_MS = 2_000;
/** How long the Cluster's slot map may still name a node that gave up slots before it is believed. */
const STALE_MS = 2_000;
const backoffMs = (failures: number) => Math.min(1_000, 50 * 2 ** Math.min(failures, 5));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());

/** A reply that says "ask again elsewhere or later", or a connection that failed: worth retrying. */
function retryable(error: unknown): boolean {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return true;
  return isNotServing(error) || /^(MOVED|ASK)\b/.test(error.message);
}

interface Shard {
  readonly node: string;
  readonly connection: SubscriberConnection;
  /** Confirmed subscriptions on this connection. */
  readonly channels: Set<string>;
  /** SSUBSCRIBEs out now. */
  pending: number;
  /** Slot moves it reported: one during an SSUBSCRIBE may have undone it. */
  moves: number;
  broken: boolean;
  idle: NodeJS.Timeout | undefined;
}

/** One SSUBSCRIBE connection per shard with channels; `connect` opens one to a `host:port`. */
export function shardTransport(topology: Topology, connect: (host: string, port: number) => SubscriberConnection): TransportFactory {
  return (events) => new ShardTransport(topology, connect, events);
}

class ShardTransport implements Transport {
  readonly #topology: Topology;
  readonly #connect: (host: string, port: number) => SubscriberConnection;
  readonly #events: TransportEvents;
  readonly #shards = new Map<string, Shard>();
  /** The channels wanted now, whether confirmed yet or not. */
  readonly #wanted = new Set<string>();
  /** Channels whose subscription is being renewed after a move or a broken connection. */
  readonly #recovering = new Set<string>();
  readonly #unwatch: () => void;
  #beat: NodeJS.Timeout | undefined;
  #beats = 0;
  #closed = false;

  constructor(topology: Topology, connect: (host: string, port: number) => SubscriberConnection, events: TransportEvents) {
    this.#topology = topology;
    this.#connect = connect;
    this.#events = events;
    this.#unwatch = topology.watch(() => this.#reconcile());
  }

  async subscribe(channel: string): Promise<void> {
    this.#wanted.add(channel);
    try {
      await this.#place(channel, Date.now() + SUBSCRIBE_BUDGET_MS);
    } catch (error) {
      this.#wanted.delete(channel);
      throw error;
    }
  }

  unsubscribe(channel: string): void {
    this.#wanted.delete(channel);
    for (const shard of this.#shards.values()) {
      if (!shard.channels.delete(channel)) continue;
      shard.connection.sunsubscribe(channel).catch((error: Error) => log('sunsubscribe %s failed: %s', channel, error.message));
      this.#idleCheck(shard);
    }
  }

  close(): void {
    this.#closed = true;
    this.#unwatch();
    clearTimeout(this.#beat);
    this.#wanted.clear();
    for (const shard of this.#shards.values()) this.#drop(shard);
  }

  /**
   * SSUBSCRIBEs the channel on the master of its slot, following moves, until `until` (then it
   * fails). A node that just gave up slots (`leaving`) is taken only once the Cluster's map still
   * names it after STALE_MS: until then that map may be stale (a replica accepts SSUBSCRIBE too).
   */
  async #place(channel: string, until: number, leaving?: string): Promise<void> {
    const slot = keySlot(channel);
    const staleUntil = Date.now() + STALE_MS;
    let failures = 0;
    for (;;) {
      if (this.#closed || !this.#wanted.has(channel)) return;
      let node = this.#topology.owner(slot);
      if (node === undefined) {
        await this.#topology.refresh();
        node = this.#topology.owner(slot);
      }
      if (this.#closed) return;
      let error: unknown = new Error(`no master is known for slot ${slot}`);
      if (node === leaving && Date.now() < staleUntil) {
        error = new Error(`the slot map still names ${node}, which gave up slots`);
      } else if (node !== undefined) {
        const shard = this.#shard(node);
        shard.pending++;
        const moves = shard.moves;
        try {
          await this.#answered(shard, shard.connection.ssubscribe(channel), 'SSUBSCRIBE');
          if (shard.broken) throw new Error(`the connection to ${node} closed`);
          if (shard.moves !== moves) throw new Error(`a slot moved away from ${node} meanwhile`);
          if (!this.#wanted.has(channel)) {
            // Unsubscribed while this was out: undo it.
            shard.connection.sunsubscribe(channel).catch(() => undefined);
            return;
          }
          shard.channels.add(channel);
          this.#heartbeatSoon();
          return;
        } catch (caught) {
          error = caught;
        } finally {
          shard.pending--;
          this.#idleCheck(shard);
        }
      }
      if (!retryable(error)) throw error;
      if (this.#closed) return;
      if (Date.now() >= until) {
        throw new Error(`SSUBSCRIBE ${channel} (slot ${slot}) found no master to take it within ${SUBSCRIBE_BUDGET_MS} ms: ${errorMessage(error)}`);
      }
      log('ssubscribe %s on %s failed (%s); asking the cluster where slot %d is', channel, node, errorMessage(error), slot);
      await Promise.all([this.#topology.refresh(), sleep(backoffMs(failures++))]);
    }
  }

  /** The reply, or a broken shard when no answer comes in time (a frozen or cut-off node). */
  #answered(shard: Shard, reply: Promise<unknown>, what: string): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.#broken(shard);
        reject(new Error(`${what} on ${shard.node} got no answer within ${ANSWER_MS} ms`));
      }, ANSWER_MS).unref();
    });
    return Promise.race([reply, late]).finally(() => clearTimeout(timer));
  }

  /**
   * Every PLACEMENT_MS for as long as there are channels: reads the slot map again (its watch
   * reconciles), and every PING_EVERY times PINGs every shard with channels.
   */
  #heartbeatSoon(): void {
    if (this.#beat || this.#closed) return;
    this.#beat = setTimeout(() => {
      this.#beat = undefined;
      const live = [...this.#shards.values()].filter((shard) => shard.channels.size > 0);
      if (live.length === 0) return;
      this.#topology.refresh().catch((error: Error) => log('reading the slot map failed: %s', error.message));
      if (++this.#beats % PING_EVERY === 0) {
        for (const shard of live) this.#answered(shard, shard.connection.ping(), 'PING').catch((error: Error) => log('%s', error.message));
      }
      this.#heartbeatSoon();
    }, PLACEMENT_MS).unref();
  }

  #shard(node: string): Shard {
    const existing = this.#shards.get(node);
    if (existing && !existing.broken) {
      clearTimeout(existing.idle);
      existing.idle = undefined;
      return existing;
    }
    const at = node.lastIndexOf(':');
    const connection = this.#connect(node.slice(0, at), Number(node.slice(at + 1)));
    const shard: Shard = { node, connection, channels: new Set(), pending: 0, moves: 0, broken: false, idle: undefined };
    connection.on('smessage', (channel: string, message: string) => this.#events.message(channel, message));
    // The server unsubscribed us from a slot it no longer serves (ioredis reports it as 'moved').
    connection.on('moved', () => this.#moved(shard));
    connection.on('end', () => this.#broken(shard));
    this.#shards.set(node, shard);
    return shard;
  }

  /** Some channel of this shard moved: place them all again (re-subscribing one that stayed is harmless). */
  #moved(shard: Shard): void {
    if (shard.broken || this.#closed) return;
    shard.moves++;
    log('a slot moved away from %s', shard.node);
    const channels = [...shard.channels];
    shard.channels.clear();
    this.#recover(channels, shard.node);
  }

  /**
   * The slot map changed: channels on a node that no longer serves their slot move to the one that
   * does. This catches a failover away from a master that froze (its connection stays open and
   * silent, and it cannot tell us that it lost its slots).
   */
  #reconcile(): void {
    if (this.#closed) return;
    for (const shard of this.#shards.values()) {
      const moved = [...shard.channels].filter((channel) => {
        const owner = this.#topology.owner(keySlot(channel));
        return owner !== undefined && owner !== shard.node;
      });
      if (moved.length === 0) continue;
      log('%d channels of %s are served elsewhere now', moved.length, shard.node);
      for (const channel of moved) {
        shard.channels.delete(channel);
        shard.connection.sunsubscribe(channel).catch(() => undefined);
      }
      this.#idleCheck(shard);
      this.#recover(moved);
    }
  }

  /** The connection closed or stopped answering: its channels go wherever their slots are served now. */
  #broken(shard: Shard): void {
    if (shard.broken) return;
    log('shard connection to %s lost; %d channels to place again', shard.node, shard.channels.size);
    const channels = [...shard.channels];
    this.#drop(shard);
    if (!this.#closed) this.#recover(channels);
  }

  #drop(shard: Shard): void {
    shard.broken = true;
    clearTimeout(shard.idle);
    shard.channels.clear();
    if (this.#shards.get(shard.node) === shard) this.#shards.delete(shard.node);
    shard.connection.disconnect();
  }

  /** Places the channels again, for as long as they are wanted; then every waiter retries. */
  #recover(channels: readonly string[], leaving?: string): void {
    const fresh = channels.filter((channel) => !this.#recovering.has(channel));
    if (fresh.length === 0) return;
    for (const channel of fresh) this.#recovering.add(channel);
    // The Cluster's slot map is stale now (nothing it sent was redirected yet): ask again first.
    const refreshed = this.#topology.refresh();
    Promise.all(
      fresh.map(async (channel) => {
        await refreshed;
        // Wanted for as long as a waiter waits: keep trying, each round within the budget.
        for (;;) {
          try {
            return await this.#place(channel, Date.now() + SUBSCRIBE_BUDGET_MS, leaving);
          } catch (error) {
            if (this.#closed || !this.#wanted.has(channel)) return;
            if (!retryable(error)) return this.#events.error(error as Error);
            log('%s', errorMessage(error));
          }
        }
      }),
    ).finally(() => {
      for (const channel of fresh) this.#recovering.delete(channel);
      if (!this.#closed) this.#events.resubscribed();
    });
  }

  /** A shard with no channel and nothing out is closed after a while. */
  #idleCheck(shard: Shard): void {
    if (shard.broken || shard.channels.size > 0 || shard.pending > 0 || shard.idle) return;
    shard.idle = setTimeout(() => {
      shard.idle = undefined;
      if (shard.channels.size === 0 && shard.pending === 0) this.#drop(shard);
    }, IDLE_MS).unref();
  }
}
