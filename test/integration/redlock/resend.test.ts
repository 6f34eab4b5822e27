// A Redlock release never lands before its own acquire on a master (issue 17: phantom holds). ioredis
// keeps a command that was out when its connection closed and resends it once it is ready again,
// while commands queued meanwhile are failed after maxRetriesPerRequest reconnections: a release
// queued behind an acquire that was still out could fail, and the acquire land afterwards, leaving a
// hold nobody owns on that master for a whole lease (found by the down tests under load: 1 run in 8).
// Here one master sits behind a proxy: its acquire is held, its connection cut, its reconnections
// connect and are cut again until ioredis fails the queue, then it passes. The acquire lands (its
// fence appears) and the hold must be gone with it.
import { LockClient, type Lease } from '../../../src/index.ts';
import { describe, eventually, uniqueName } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { startProxy, type Proxy } from '../../helpers/proxy.ts';
import { setupMasters } from './masters.ts';

const kinds: readonly { kind: string; take(client: LockClient, name: string): Promise<Lease>; hold: (name: string) => string }[] = [
  { kind: 'lock()', take: (client, name) => client.lock(name).acquire(), hold: (name) => `relock:{${name}}` },
  { kind: 'readWriteLock().writeLock()', take: (client, name) => client.readWriteLock(name).writeLock().acquire(), hold: (name) => `relock:{${name}}:rw` },
  { kind: 'semaphore()', take: (client, name) => client.semaphore(name, { permits: 2 }).acquire(), hold: (name) => `relock:{${name}}:sem` },
];

/** Cuts the proxy's connections `times` times, each once the client has connected again. */
async function cutReconnections(proxy: Proxy, times: number): Promise<void> {
  for (let i = 0; i < times; i++) {
    await eventually(() => proxy.connections === 0, `the connection cut before reconnection ${i + 1}`, 3_000);
    await eventually(() => proxy.connections > 0, `reconnection ${i + 1} through the proxy`, 3_000);
    proxy.cut();
  }
}

describe('Redlock: a release follows its acquire on each master, also across a reconnection (3 masters)', (it) => {
  const m = setupMasters(it, 3);

  for (const { kind, take, hold } of kinds) {
    it(`${kind}: the acquire ioredis resends after its release failed in the queue leaves no hold behind`, async () => {
      const proxy = await startProxy(m.servers[1]!);
      const client = new LockClient({ redis: [m.urls[0]!, `redis://${proxy.host}:${proxy.port}`, m.urls[2]!] });
      client.on('error', () => undefined);
      try {
        await (await take(client, uniqueName('rs'))).release(); // every master connected, the scripts loaded
        const name = uniqueName('rs');
        proxy.blackhole();
        const lease = await take(client, name); // taken on masters 0 and 2; master 1's call is held
        proxy.cut(); // out when its connection closes: ioredis will resend it
        // The release once the client knows the connection closed: queued, not written.
        await eventually(() => proxy.connections === 0, 'the cut', 3_000);
        await sleep(50);
        const released = lease.release();
        // Reconnections that connect but never get ready: the third failure fails the queued commands.
        await cutReconnections(proxy, 3);
        await released;
        proxy.pass();
        const fence = `${hold(name)}:fence`;
        await eventually(async () => (await m.admins[1]!.exists(fence)) === 1, 'the resent acquire lands on master 1', 5_000);
        await eventually(async () => (await m.admins[1]!.exists(hold(name))) === 0, `no hold of ${name} left on master 1`, 2_000);
      } finally {
        await client.close();
        await proxy.close();
      }
    });
  }
});
