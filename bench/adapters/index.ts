// Every library measured, in the order the report lists them, with the settings used. Loading this
// loads no library: a worker imports only its own adapter module.
import { BASELINE_COMMIT, BASELINE_WHAT } from '../lib/baseline.ts';
import { LEASE_MS, RETRY_MS, type AdapterSpec, type Create } from './types.ts';

const lease = `${LEASE_MS / 1000} s`;

export const ADAPTERS: readonly AdapterSpec[] = [
  {
    id: 'relock',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'ioredis',
    settings: `\`new LockClient({ redis: url })\`, \`lock(name).acquire()\`: watchdog lease ${lease} (the default), \`waitMs\` Infinity (the default)`,
    module: './relock.ts',
  },
  {
    id: 'relock-fair',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'ioredis',
    settings: `\`client.fairLock(name).acquire()\` on the same client settings as relock: FIFO across processes, the release grants the lock to the head of the queue. Scenarios 3 and 4 only; reported "not available" when the bundle has no \`fairLock\``,
    scenarios: ['contended', 'herd'],
    module: './relock-fair.ts',
  },
  {
    id: 'relock+diagnostics',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'ioredis',
    settings: `relock as above, with a no-op subscriber on every diagnostics channel (\`tracingChannel('relock:acquire')\`, \`tracingChannel('relock:release')\`, \`relock:lost\`, \`relock:renew\`, \`relock:wake\`): what turning diagnostics on costs. Scenario 1 only`,
    scenarios: ['uncontended'],
    module: './relock-diagnostics.ts',
  },
  {
    id: 'relock-node-redis',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'node-redis',
    settings: `relock as above, each client given a connected node-redis 6 \`createClient({ url })\` (\`new LockClient({ redis })\`) instead of a URL: the cost of the client family. Scenarios 1 and 3 only`,
    scenarios: ['uncontended', 'contended'],
    module: './relock-node-redis.ts',
  },
  {
    id: 'relock-glide',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'glide',
    settings: `relock as above, each client given a connected GLIDE 2.5 \`GlideClient.createClient({ addresses, requestTimeout: 2_000 })\` (\`new LockClient({ redis })\`) instead of a URL: the cost of the client family; relock's waiters listen on a GLIDE client of their own. Scenarios 1 and 3 only`,
    scenarios: ['uncontended', 'contended'],
    module: './relock-glide.ts',
  },
  {
    id: 'relock-redisson',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'ioredis',
    settings: `relock as above with \`layout: 'redisson'\` (locks on Redisson's RLock keys, docs/redisson.md): the price of the layout. Scenarios 1 and 3 only`,
    scenarios: ['uncontended', 'contended'],
    module: './relock-redisson.ts',
  },
  {
    id: 'relock-redisson+java',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'relock',
    client: 'ioredis',
    settings: `every process's acquires alternate between relock with \`layout: 'redisson'\` and a Redisson client stand-in (test/helpers/redisson: Redisson's RLock protocol, lease ${lease} by its watchdog) on the same name: relock and Java services sharing one lock. Scenario 3 only`,
    scenarios: ['contended'],
    module: './relock-redisson-java.ts',
  },
  {
    id: 'relock-0.1.0',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'baseline',
    client: 'ioredis',
    settings: `relock before this change: the relock adapter over a bundle built by the bench from commit ${BASELINE_COMMIT} (${BASELINE_WHAT}), same settings. Scenarios 1 and 3 only; left out, with a note, where git or that commit is not available`,
    scenarios: ['uncontended', 'contended'],
    module: './relock-0.1.0.ts',
  },
  {
    id: 'node-redisson',
    pkg: 'node-redisson',
    waiting: 'pub/sub',
    kind: 'peer',
    client: 'ioredis',
    settings: `\`new Redisson({ redis: { options } })\`, \`getLock(name).lock()\` (watchdog, ${lease} default lease), one \`getLock\` per acquire since the owner id belongs to the lock object. A waiter sleeps on the lock's channel for at most the holder's remaining TTL`,
    module: './node-redisson.ts',
  },
  {
    id: '@sesamecare-oss/redlock',
    pkg: '@sesamecare-oss/redlock',
    waiting: 'polling',
    kind: 'peer',
    client: 'ioredis',
    settings: `\`new Redlock([redis], { retryCount: -1, retryDelay: ${RETRY_MS}, retryJitter: ${RETRY_MS / 2} })\` (retry forever, every ${RETRY_MS / 2}-${RETRY_MS * 1.5} ms), \`acquire([name], ${LEASE_MS})\``,
    module: './sesame-redlock.ts',
  },
  {
    id: 'redlock',
    pkg: 'redlock',
    waiting: 'polling',
    kind: 'peer',
    client: 'ioredis',
    settings: `\`new Redlock([redis], { retryCount: -1, retryDelay: ${RETRY_MS}, retryJitter: ${RETRY_MS / 2} })\`, \`lock(name, ${LEASE_MS})\``,
    module: './redlock.ts',
  },
  {
    id: 'redis-semaphore',
    pkg: 'redis-semaphore',
    waiting: 'polling',
    kind: 'peer',
    client: 'ioredis',
    settings: `\`new Mutex(redis, name, { lockTimeout: ${LEASE_MS}, acquireTimeout: Infinity, retryInterval: ${RETRY_MS} })\` per acquire (${RETRY_MS} ms is its default; auto-refresh at its default 0.8 x lockTimeout)`,
    module: './redis-semaphore.ts',
  },
  {
    id: 'redlock-universal',
    pkg: 'redlock-universal',
    waiting: 'polling',
    kind: 'peer',
    client: 'ioredis',
    settings: `\`createLock({ adapter: new IoredisAdapter(redis), key: name, ttl: ${LEASE_MS}, retryAttempts: Number.MAX_SAFE_INTEGER, retryDelay: ${RETRY_MS} })\` once per name (it has no "forever"); default performance mode`,
    module: './redlock-universal.ts',
  },
  {
    id: 'simple-redis-mutex',
    pkg: 'simple-redis-mutex',
    waiting: 'pub/sub',
    kind: 'peer',
    client: 'node-redis',
    settings: `\`lock(client, name, { timeout: ${LEASE_MS} })\` on a node-redis client; its default 10 s safety poll. Every release is published on one global channel and wakes every local waiter of that lock`,
    module: './simple-redis-mutex.ts',
  },
  {
    id: 'floor-poll',
    pkg: undefined,
    waiting: 'polling',
    kind: 'floor',
    client: 'ioredis',
    settings: `\`SET key token NX PX ${LEASE_MS}\`, retried every ${RETRY_MS} ms; release by a Lua compare-and-delete (EVALSHA)`,
    module: './floor-poll.ts',
  },
  {
    id: 'floor-pubsub',
    pkg: undefined,
    waiting: 'pub/sub',
    kind: 'floor',
    client: 'ioredis',
    settings: `\`SET NX PX ${LEASE_MS}\`; release by a Lua compare-and-delete that publishes on the lock's channel; one shared subscriber per client with a ref-counted SUBSCRIBE per lock; a release wakes every local waiter of that lock; 1 s safety retry`,
    module: './floor-pubsub.ts',
  },
  {
    id: 'floor-node-redis',
    pkg: undefined,
    waiting: 'polling',
    kind: 'floor',
    client: 'node-redis',
    settings: `floor-poll's loop on a node-redis 6 \`createClient({ url })\` (commands through \`sendCommand\`, the release by EVALSHA), as relock-node-redis runs on: the client's own floor. Scenario 1 only`,
    scenarios: ['uncontended'],
    module: './floor-node-redis.ts',
  },
  {
    id: 'floor-glide',
    pkg: undefined,
    waiting: 'polling',
    kind: 'floor',
    client: 'glide',
    settings: `floor-poll's loop on a GLIDE 2.5 \`GlideClient\` (2 s request timeout; commands through \`customCommand\`, the release by EVALSHA), as relock-glide runs on: the client's own floor. Scenario 1 only`,
    scenarios: ['uncontended'],
    module: './floor-glide.ts',
  },
  {
    id: 'relock-scripts',
    pkg: undefined,
    waiting: 'polling',
    kind: 'floor',
    client: 'ioredis',
    settings: `relock's own acquire and release scripts through its own \`LockCommands\` and script runner (src/lock/commands.ts, src/runtime/script.ts) on one ioredis connection, without the Lock/Lease layer: the part of relock's cost that is its scripts. Scenario 1 only`,
    scenarios: ['uncontended'],
    module: './relock-scripts.ts',
  },
];

export function adapterById(id: string): AdapterSpec {
  const spec = ADAPTERS.find((adapter) => adapter.id === id);
  if (!spec) throw new Error(`No adapter "${id}"; known: ${ADAPTERS.map((a) => a.id).join(', ')}`);
  return spec;
}

/** Loads one library and returns its client factory. */
export async function load(id: string): Promise<Create> {
  const module = (await import(new URL(adapterById(id).module, import.meta.url).href)) as { create: Create };
  return module.create;
}
