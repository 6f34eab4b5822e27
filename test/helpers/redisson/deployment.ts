// The deployments the Redisson interop suites run on (test/integration/redisson/*): one server, and a
// Cluster (sharded pub/sub where the server has it) in CI's matrices, each with relock clients in the Redisson layout
// and Redisson stand-ins, all closed after the suite.
import { LockClient } from '../../../src/index.ts';
import { TEST_LAYOUT } from '../clients.ts';
import { SHARDED_PUBSUB, startCluster } from '../cluster.ts';
import { describe, type It } from '../describe.ts';
import { startRedis } from '../redis.ts';
import { redissonStandIn, type RedisLike, type RedissonStandIn, type StandInOptions } from './index.ts';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One deployment both sides lock on: a server or a Cluster, with its clients closed after the suite. */
export interface Deployment {
  relock(options?: { leaseMs?: number }): LockClient;
  java(options?: StandInOptions): RedissonStandIn;
  /** A plain command on the node that serves `key`. */
  call(key: string, ...args: (string | number)[]): Promise<unknown>;
}

function deployment(it: It, start: () => Promise<Started>, sharded: boolean): Deployment {
  let started: Started;
  const clients: LockClient[] = [];
  const instances: RedissonStandIn[] = [];
  it.before(async () => {
    started = await start();
  });
  it.after(async () => {
    await Promise.all([...clients.splice(0).map((client) => client.close()), ...instances.splice(0).map((instance) => instance.close())]);
    await started.stop();
  });
  return {
    relock(options = {}) {
      const client = new LockClient({ redis: started.redis() as string, layout: 'redisson', ...options });
      clients.push(client);
      return client;
    },
    java(options = {}) {
      const instance = redissonStandIn(started.standInRedis(), { sharded, ...options });
      instances.push(instance);
      return instance;
    },
    call: (key, ...args) => started.call(key, ...args),
  };
}


interface Started {
  redis: () => unknown;
  standInRedis: () => RedisLike;
  call: Deployment['call'];
  stop(): Promise<void>;
}

const onServer = async (): Promise<Started> => {
  const server = await startRedis();
  const admin = server.connect();
  return { redis: () => server.url, standInRedis: () => server.connect(), call: (_key, ...args) => admin.call(...(args as [string])), stop: () => server.stop() };
};

const onCluster = async (): Promise<Started> => {
  const cluster = await startCluster();
  const admin = cluster.connect();
  return { redis: () => cluster.client(), standInRedis: () => cluster.connect(), call: (_key, ...args) => admin.call(...(args as [string])), stop: () => cluster.stop() };
};

/**
 * Whether the Cluster suites run: in the layout cell of `npm run test:clients` and in the server
 * matrix (both in CI), not in `npm test`, which keeps the one-server suites within its time budget.
 */
const ON_CLUSTER = TEST_LAYOUT === 'redisson' || process.env.RELOCK_SERVER !== undefined;

/** Runs `scenarios` in a suite on one server, then (see ON_CLUSTER) in one on a Cluster. */
export function onEveryDeployment(title: string, scenarios: (it: It, d: Deployment) => void): void {
  describe(`${title} on one server`, (it) => scenarios(it, deployment(it, onServer, false)));
  if (ON_CLUSTER) describe(`${title} on a Cluster`, (it) => scenarios(it, deployment(it, onCluster, SHARDED_PUBSUB)));
}
