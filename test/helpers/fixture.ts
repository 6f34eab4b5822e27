// A suite's Redis (one server, or any deployment of helpers/deployment.ts) and the clients its tests
// make, all closed after the suite.
import type { Redis } from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src/index.ts';
import type { It } from './describe.ts';
import type { Closable } from './clients.ts';
import { disconnect, startDeployment, type Deployment, type PassedIn } from './deployment.ts';
import type { RedisServer, StartOptions } from './redis.ts';

export { redisFor, TEST_CLIENT } from './clients.ts';

export interface Fixture {
  /** The one server (a fixture of one server only: a Cluster or Redlock fixture has `deployment.nodes`). */
  readonly server: RedisServer;
  /** A plain connection for inspecting and arranging state (one server only: else `admins`). */
  readonly admin: Redis;
  /** What the fixture runs on: one server, a Cluster, or the masters of a Redlock client. */
  readonly deployment: Deployment;
  /** A plain connection per node: the server, every node of a Cluster, every master. */
  readonly admins: readonly Redis[];
  /** Script calls (EVALSHA and EVAL) so far, summed over every node. */
  scriptCalls(): Promise<number>;
  /** The ioredis connections every client of the fixture is given (`shareConnections`), else undefined. */
  readonly passedIn: PassedIn | undefined;
  /** A LockClient on the suite's server(s), closed after the suite. */
  client(options?: LockClientOptions): LockClient;
  close(): Promise<void>;
}

export interface FixtureOptions {
  /**
   * Every client the fixture makes gets one set of ioredis connections passed in (as an application
   * shares its connections): close() leaves them open, and the fixture closes them after its clients.
   * Else each client gets its own connection of the suites' client family. @default false
   */
  readonly shareConnections?: boolean;
}

export async function fixture(options: StartOptions = {}): Promise<Fixture> {
  return fixtureOn(await startDeployment('server', options));
}

/** A fixture over a deployment (helpers/deployment.ts); its close() stops the deployment. */
export function fixtureOn(deployment: Deployment, options: FixtureOptions = {}): Fixture {
  const clients = new Set<LockClient>();
  const connections = new Set<Closable>();
  const passedIn = options.shareConnections ? deployment.connect() : undefined;
  const only = <T>(what: string, value: () => T): T => {
    if (deployment.topology !== 'server') throw new Error(`a fixture on a ${deployment.topology} has no single ${what}: use deployment.nodes, admins or adminOf(key)`);
    return value();
  };
  return {
    get server() {
      return only('server', () => deployment.nodes[0]!);
    },
    get admin() {
      return only('admin connection', () => deployment.admins[0]!);
    },
    deployment,
    admins: deployment.admins,
    scriptCalls: () => scriptCalls(...deployment.admins),
    passedIn,
    client(clientOptions = {}) {
      const client = new LockClient({ redis: clientOptions.redis ?? passedIn ?? deployment.redis(connections), ...clientOptions });
      clients.add(client);
      return client;
    },
    async close() {
      await Promise.all([...clients].map((client) => client.close()));
      for (const connection of connections) connection.disconnect();
      if (passedIn) disconnect(passedIn);
      await deployment.stop();
    },
  };
}

/** Sum of `calls` over INFO commandstats, per command (lower-case). */
export async function commandStats(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const stats: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats[match[1]!] = Number(match[2]);
  return stats;
}

/** Script calls (EVALSHA and EVAL) so far over every server given (INFO commandstats). */
export async function scriptCalls(...admins: Redis[]): Promise<number> {
  let calls = 0;
  for (const admin of admins) {
    const stats = await commandStats(admin);
    calls += (stats.evalsha ?? 0) + (stats.eval ?? 0);
  }
  return calls;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A suite's fixture and two clients on it, filled in before the suite's first test. */
export interface Suite {
  f: Fixture;
  client: LockClient;
  other: LockClient;
}

/**
 * Starts the suite's Redis before its tests and stops it, with every client, after them. `start`: the
 * one server's options, or a deployment of any topology (helpers/deployment.ts).
 */
export function setup(it: It, clientOptions: LockClientOptions = {}, otherOptions: LockClientOptions = {}, start: StartOptions | (() => Promise<Deployment>) = {}, options: FixtureOptions = {}): Suite {
  const suite = {} as Suite;
  it.before(async () => {
    suite.f = fixtureOn(typeof start === 'function' ? await start() : await startDeployment('server', start), options);
    suite.client = suite.f.client(clientOptions);
    suite.other = suite.f.client(otherOptions);
  });
  it.after(() => suite.f.close());
  return suite;
}
