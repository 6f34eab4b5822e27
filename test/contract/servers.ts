// What a contract suite runs on: the servers a test file starts, and two clients over them made
// before the suite's first test (every server stopped after its last).
import type { LockClient } from '../../src/index.ts';
import type { It } from '../helpers/describe.ts';

/** The servers of a suite: a LockClient over them (closed by stop()), and stop(). */
export interface SuiteServers {
  client(): LockClient;
  stop(): Promise<void>;
}

/** Starts the servers before the suite and stops them after it; fills in two clients. */
export function onServers<S extends SuiteServers>(it: It, start: () => Promise<S>): { servers: S; client: LockClient; other: LockClient } {
  const s = {} as { servers: S; client: LockClient; other: LockClient };
  it.before(async () => {
    s.servers = await start();
    s.client = s.servers.client();
    s.other = s.servers.client();
  });
  it.after(() => s.servers.stop());
  return s;
}
