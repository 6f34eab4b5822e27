// The sharded subscriber over fake shard connections and a fake slot map: routing by slot, and what
// it does when a slot moves, a connection ends, the map changes, or a node answers MOVED or NOPERM.
// (On a real Cluster: test/integration/cluster/.)
import { EventEmitter } from 'node:events';
import * as assert from 'uvu/assert';
import type { SubscriberConnection, Topology } from '../../src/port/port.ts';
import { shardTransport } from '../../src/runtime/shards.ts';
import { keySlot } from '../../src/runtime/slot.ts';
import type { TransportEvents } from '../../src/runtime/subscriber.ts';
import { describe, eventually, rejects } from '../helpers/describe.ts';

class ReplyError extends Error {
  override name = 'ReplyError';
}

type Answer = (channel: string) => Promise<unknown>;

/** A shard connection: SSUBSCRIBE answers at once, unless its node has another answer. */
class FakeConnection extends EventEmitter {
  readonly subscribed = new Set<string>();
  disconnected = false;
  constructor(
    readonly node: string,
    private readonly answers: Map<string, Answer>,
  ) {
    super();
  }
  async ssubscribe(channel: string): Promise<unknown> {
    const reply = await (this.answers.get(this.node) ?? (async () => 1))(channel);
    this.subscribed.add(channel);
    return reply;
  }
  async sunsubscribe(channel: string): Promise<unknown> {
    this.subscribed.delete(channel);
    return 0;
  }
  async ping(): Promise<unknown> {
    return 'PONG';
  }
  disconnect(): void {
    this.disconnected = true;
    this.emit('end');
  }
}

/** `notify`: refresh() calls the watchers, as the adapters' topologies do after reading the slot map. */
function setup(owners: Record<number, string>, notify = false) {
  const map = new Map<number, string>(Object.entries(owners).map(([slot, node]) => [Number(slot), node]));
  const watchers = new Set<() => void>();
  let refreshes = 0;
  const topology: Topology = {
    owner: (slot) => map.get(slot),
    refresh: async () => {
      refreshes++;
      if (notify) for (const watcher of watchers) watcher();
    },
    watch: (listener) => {
      watchers.add(listener);
      return () => void watchers.delete(listener);
    },
    masters: () => [],
  };
  const connections: FakeConnection[] = [];
  const answers = new Map<string, Answer>();
  const connect = (host: string, port: number) => {
    const connection = new FakeConnection(`${host}:${port}`, answers);
    connections.push(connection);
    return connection as unknown as SubscriberConnection;
  };
  const events = { messages: [] as string[], resubscribed: 0, errors: [] as Error[] };
  const sink: TransportEvents = {
    message: (channel, message) => events.messages.push(`${channel} ${message}`),
    resubscribed: () => events.resubscribed++,
    error: (error) => events.errors.push(error),
  };
  const transport = shardTransport(topology, connect)(sink);
  const live = (node: string) => connections.filter((c) => c.node === node && !c.disconnected);
  return { map, watchers, answers, transport, connections, events, live, refreshes: () => refreshes };
}

const A = 'relock:{a}:released';
const B = 'relock:{b}:released';

describe('shardTransport', (it) => {
  it('subscribes each channel on the master of its slot, one connection per master, and delivers its messages', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000', [keySlot(B)]: '10.0.0.2:7000' });
    await t.transport.subscribe(A);
    await t.transport.subscribe(B);
    await t.transport.subscribe('relock:{a}:other');
    assert.is(t.connections.length, 2);
    assert.equal([...t.live('10.0.0.1:7000')[0]!.subscribed].sort(), ['relock:{a}:other', A]);
    t.live('10.0.0.2:7000')[0]!.emit('smessage', B, 'release');
    assert.equal(t.events.messages, [`${B} release`]);
    t.transport.close();
    assert.ok(t.connections.every((c) => c.disconnected));
  });

  it('moves a channel off a node the slot map no longer names, with no word from the server (a failover leaves it on the old master): the map is read every second', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000' }, true);
    await t.transport.subscribe(A);
    const before = t.refreshes();
    // The map changes; the old node says nothing and stays connected (a replica keeps its subscriptions).
    t.map.set(keySlot(A), '10.0.0.2:7000');
    await eventually(() => t.live('10.0.0.2:7000')[0]?.subscribed.has(A) === true, 'the channel on the new master', 3_000);
    assert.not.ok(t.live('10.0.0.1:7000')[0]?.subscribed.has(A), 'no longer on the old node');
    assert.ok(t.refreshes() > before, 'the slot map was read again');
    await eventually(() => t.events.resubscribed === 1, 'every waiter woken');
    t.transport.close();
  });

  it('places the channels of a shard that reported a slot move where the map says, then wakes every waiter', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000' });
    await t.transport.subscribe(A);
    t.map.set(keySlot(A), '10.0.0.2:7000');
    t.live('10.0.0.1:7000')[0]!.emit('moved');
    await eventually(() => t.events.resubscribed === 1, 'every waiter woken');
    assert.ok(t.live('10.0.0.2:7000')[0]!.subscribed.has(A));
    t.transport.close();
  });

  it('does not take the node that gave up the slot while the map still names it, for a while', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000' });
    await t.transport.subscribe(A);
    const old = t.live('10.0.0.1:7000')[0]!;
    old.subscribed.clear(); // the server unsubscribed it
    old.emit('moved');
    // The map catches up 300 ms later (a stale map names the old master, now a replica).
    setTimeout(() => t.map.set(keySlot(A), '10.0.0.2:7000'), 300);
    await eventually(() => t.events.resubscribed === 1, 'placed again', 3_000);
    assert.ok(t.live('10.0.0.2:7000')[0]?.subscribed.has(A), 'on the new master');
    assert.not.ok(old.subscribed.has(A), 'not again on the old one');
    t.transport.close();
  });

  it('places the channels of a connection that ended, and wakes every waiter', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000' });
    await t.transport.subscribe(A);
    const lost = t.live('10.0.0.1:7000')[0]!;
    lost.disconnected = true;
    lost.emit('end');
    await eventually(() => t.events.resubscribed === 1, 'placed again');
    assert.is(t.connections.length, 2);
    assert.ok(t.live('10.0.0.1:7000')[0]!.subscribed.has(A));
    t.transport.close();
  });

  it('moves channels when the slot map changes under them (a failover away from a silent master)', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000', [keySlot(B)]: '10.0.0.1:7000' });
    await t.transport.subscribe(A);
    await t.transport.subscribe(B);
    t.map.set(keySlot(A), '10.0.0.3:7000');
    for (const watcher of t.watchers) watcher();
    await eventually(() => t.events.resubscribed === 1, 'moved');
    assert.ok(t.live('10.0.0.3:7000')[0]!.subscribed.has(A));
    assert.ok(t.live('10.0.0.1:7000')[0]!.subscribed.has(B), 'the channel whose slot stayed stays');
    assert.not.ok(t.live('10.0.0.1:7000')[0]!.subscribed.has(A));
    t.transport.close();
    assert.is(t.watchers.size, 0, 'close() stops listening to the map');
  });

  it('retries a MOVED answer after asking for the map again, and fails at once on NOPERM', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000', [keySlot(B)]: '10.0.0.1:7000' });
    t.answers.set('10.0.0.1:7000', async (channel) => {
      if (channel !== A) throw new ReplyError("NOPERM this user has no permissions to access the 'relock:{b}:released' channel");
      t.map.set(keySlot(A), '10.0.0.2:7000'); // what the refreshed map then says
      throw new ReplyError(`MOVED ${keySlot(A)} 10.0.0.2:7000`);
    });
    await t.transport.subscribe(A);
    assert.ok(t.live('10.0.0.2:7000')[0]!.subscribed.has(A), 'subscribed where the slot is served now');
    assert.ok(t.refreshes() >= 1, 'asked for the map again');
    const error = await rejects(t.transport.subscribe(B));
    assert.match((error as Error).message, /NOPERM/);
    t.transport.close();
  });

  it('closes a shard connection once it has had no channel for a while', async () => {
    const t = setup({ [keySlot(A)]: '10.0.0.1:7000' });
    await t.transport.subscribe(A);
    t.transport.unsubscribe(A);
    const connection = t.connections[0]!;
    assert.not.ok(connection.disconnected, 'kept for the next waiter');
    await eventually(() => connection.disconnected, 'closed when idle', 4_000);
    t.transport.close();
  });
});
