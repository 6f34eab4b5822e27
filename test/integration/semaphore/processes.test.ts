// The semaphore's wake-ups across clients and processes: a release of k permits lets k waiters in
// promptly, wherever they wait and however the releases and the woken waiters' attempts interleave.
import * as assert from 'uvu/assert';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LockClient } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import type { FromChild, ToChild } from './child.ts';

const CHILD_FILE = fileURLToPath(new URL('./child.ts', import.meta.url));

/** A process with a LockClient of its own, waiting on semaphores as told (child.ts). */
class Child {
  readonly #process: ChildProcess;
  readonly #listeners = new Set<(message: FromChild) => void>();

  constructor(redis: string) {
    this.#process = fork(CHILD_FILE, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, RELOCK_SEM_CHILD: redis }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.#process.on('message', (message: FromChild) => {
      for (const listener of this.#listeners) listener(message);
    });
  }

  on(listener: (message: FromChild) => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** The next message that `match` accepts. */
  next(match: (message: FromChild) => boolean): Promise<FromChild> {
    return new Promise((resolve) => {
      const off = this.on((message) => {
        if (!match(message)) return;
        off();
        resolve(message);
      });
    });
  }

  send(message: ToChild): void {
    this.#process.send(message);
  }

  async waiting(): Promise<number> {
    const reply = this.next((message) => message.type === 'waiting');
    this.send({ type: 'waiting' });
    return ((await reply) as FromChild & { type: 'waiting' }).count;
  }

  async kill(): Promise<void> {
    if (this.#process.exitCode !== null || this.#process.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#process.once('exit', resolve));
    this.#process.kill('SIGKILL');
    await exited;
  }
}

/** A waiter that got in: where, when, and how to release its lease. */
interface Entry {
  readonly where: string;
  readonly at: number;
  release(): Promise<void>;
}

describe('Semaphore#acquire across processes', (it) => {
  const s = setup(it);
  let holder: LockClient;
  let child: Child;
  it.before(async () => {
    holder = s.f.client();
    child = new Child(s.f.server.url);
    await within(child.next((message) => message.type === 'ready'), 10_000, 'the child process ready');
  });
  it.after(() => child?.kill());

  it('lets both remaining waiters in when two single permits are released one after the other, wherever they wait (one holder of 4, six waiters over two clients and a second process)', async () => {
    // Which waiters win the first four permits, and whether the second release's message reaches a
    // client while the first one's woken waiter is still attempting, varies from run to run.
    for (let round = 1; round <= 8; round++) {
      const name = uniqueName('sem');
      const held = await holder.semaphore(name, { permits: 4 }).acquire({ permits: 4 });
      const inside: Entry[] = [];
      const wait = (client: LockClient, where: string) =>
        client
          .semaphore(name, { permits: 4 })
          .acquire()
          .then((lease) => void inside.push({ where, at: performance.now(), release: () => lease.release() }));
      const waits = [wait(s.client, 'client A'), wait(s.client, 'client A'), wait(s.other, 'client B'), wait(s.other, 'client B')];
      // A round that fails leaves its waiters to the suite's close(), which rejects them.
      for (const waiting of waits) waiting.catch(() => undefined);
      const off = child.on((message) => {
        if (message.type !== 'acquired') return;
        const { id } = message;
        inside.push({
          where: 'the child process',
          at: performance.now(),
          release: async () => {
            const released = child.next((reply) => reply.type === 'released' && reply.id === id);
            child.send({ type: 'release', id });
            await released;
          },
        });
      });
      try {
        for (const id of ['c1', 'c2']) child.send({ type: 'acquire', id, name, permits: 4 });
        await eventually(async () => s.client.waiting === 2 && s.other.waiting === 2 && (await child.waiting()) === 2, 'six waiters queued');

        await held.release(); // 4 permits
        await eventually(() => inside.length === 4, `round ${round}: four waiters in after the release of 4`);
        // The other two tried and lost: they sleep until a message (or the holders' 30 s leases end).
        // Two of the four release one permit each, one after the other; at least two are in this process.
        const [first, second] = inside.filter((entry) => entry.where !== 'the child process');
        await first!.release();
        await second!.release();
        const releasedAt = performance.now();
        await eventually(() => inside.length === 6, `round ${round}: both remaining waiters in after two single releases`, 3_000).catch(() => undefined);
        const late = inside.slice(4).map((entry) => Math.round(entry.at - releasedAt));
        assert.is(inside.length, 6, `round ${round}: only ${inside.length - 4} of the two remaining waiters got in (after ${late} ms); the first four were in ${inside.slice(0, 4).map((entry) => entry.where)}`);
        assert.ok(Math.max(...late) <= 500, `round ${round}: the remaining waiters got in ${late} ms after the second release`);
        for (const entry of inside) if (entry !== first && entry !== second) await entry.release();
        await Promise.all(waits);
      } finally {
        off();
      }
    }
  }, 120_000);
});
