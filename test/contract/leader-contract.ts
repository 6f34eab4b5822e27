// The leader election's contract (../shared/CONTRACT.md, "Leader election"), run on the servers a
// test file hands in (one server, or a Redis Cluster): campaign leads one caller at a time, woken by
// the resignation's message (not by polling) or by the dead leader's lease end; the term's epoch is a
// fencing token that only goes up; its signal aborts when it ends (resigned, lost, closed); current()
// reads who leads; observe() pushes every change in order, including a term that ended by its lease
// and one that changed while its subscriber was down; bad arguments are refused before any I/O.
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, LockError, LockLostError, LockTimeoutError, type Election, type LeaderInfo, type Leadership } from '../../src/index.ts';
import { leaderKeys } from '../../src/leader/keys.ts';
import { keySlot } from '../../src/runtime/slot.ts';
import { assertClosedBeforeCall } from '../helpers/closed.ts';
import { describe, eventually, rejects, uniqueName, within } from '../helpers/describe.ts';
import { scriptCalls as countScripts, sleep } from '../helpers/fixture.ts';
import { onServers } from './servers.ts';

/** The servers a leader suite runs on, started before its first test. */
export interface LeaderServers {
  /** A LockClient over them, closed by stop(). */
  client(): LockClient;
  /** A plain connection per server (every master of a Cluster). */
  readonly admins: readonly Redis[];
  stop(): Promise<void>;
}

/** Collects what an observer yields, until its signal aborts. */
function watch(election: Election): { seen: (LeaderInfo | null)[]; stop(): Promise<void> } {
  const controller = new AbortController();
  const seen: (LeaderInfo | null)[] = [];
  const done = (async () => {
    for await (const state of election.observe({ signal: controller.signal })) seen.push(state);
  })();
  return {
    seen,
    stop: async () => {
      controller.abort();
      await within(done, 2_000, 'the observer to end');
    },
  };
}

const who = (state: LeaderInfo | null) => (state ? `${state.candidate}#${state.epoch}` : 'nobody');

export function leaderContract(label: string, start: () => Promise<LeaderServers>): void {
  describe(`Leader election contract: ${label}`, (it) => {
    const s = onServers(it, start);
    const scriptCalls = () => countScripts(...s.servers.admins);
    /** The master that serves an election's keys. */
    const holderOf = async (name: string) => {
      const key = leaderKeys('relock', name).lock;
      // KEYS, not EXISTS: a master that does not serve the slot answers EXISTS with MOVED.
      for (const admin of s.servers.admins) if ((await admin.keys(key)).length > 0) return admin;
      throw new Error(`no server holds ${key}`);
    };

    it('leads one caller at a time: its term (candidate, epoch, since by Redis) is what current() reads', async () => {
      const name = uniqueName('leader');
      const election = s.client.leader(name, { candidate: 'alpha' });
      assert.is(election.name, name);
      assert.is(await election.current(), null, 'nobody leads yet');
      const admin = s.servers.admins[0]!;
      const [seconds] = await admin.time();
      const term = await election.campaign();
      assert.is(term.candidate, 'alpha');
      assert.ok(Number.isSafeInteger(term.epoch) && term.epoch > 0);
      assert.ok(term.since >= Number(seconds) * 1000 && term.since < Number(seconds) * 1000 + 5_000, `since ${term.since}`);
      assert.not.ok(term.signal.aborted);
      assert.equal(await s.other.leader(name).current(), { candidate: 'alpha', epoch: term.epoch, since: term.since });
      assert.instance(await rejects(s.other.leader(name).campaign({ waitMs: 0 })), LockTimeoutError);
      const keys = leaderKeys('relock', name);
      assert.is(new Set([keys.lock, keys.fence, keys.channel].map(keySlot)).size, 1, 'one Cluster slot');
      await term.resign();
      assert.is(await election.current(), null);
    });

    it('wakes a waiting campaign by the resignation, not by polling, with a higher epoch', async () => {
      const name = uniqueName('leader');
      const first = await s.client.leader(name, { candidate: 'first' }).campaign();
      const waiting = s.other.leader(name, { candidate: 'second' }).campaign();
      await eventually(() => s.other.waiting === 1, 'the campaign waits');
      await sleep(100);
      const before = await scriptCalls();
      await sleep(500);
      assert.is((await scriptCalls()) - before, 0, 'no script call while it waits (the lease is 30 s)');
      const resigned = performance.now();
      await first.resign();
      const second = await within(waiting, 2_000, 'the waiting campaign');
      assert.ok(performance.now() - resigned < 1_000, 'woken by the message');
      assert.is(second.candidate, 'second');
      assert.ok(second.epoch > first.epoch, `epoch ${second.epoch} after ${first.epoch}`);
      await second.resign();
    });

    it('aborts the signal with ERR_LOCK_RESIGNED at resign() (and at the end of `await using`); resign() twice is fine', async () => {
      const name = uniqueName('leader');
      const term = await s.client.leader(name).campaign();
      const resigning = term.resign();
      assert.ok(term.signal.aborted, 'at the call, before Redis answers');
      assert.instance(term.signal.reason, LockError);
      assert.is((term.signal.reason as LockError).code, 'ERR_LOCK_RESIGNED');
      await resigning;
      await term.resign();
      let held: Leadership | undefined;
      {
        await using scoped = await s.client.leader(name).campaign();
        held = scoped;
        assert.ok(scoped.epoch > term.epoch);
        assert.ok((await s.other.leader(name).current()) !== null);
      }
      assert.is((held.signal.reason as LockError).code, 'ERR_LOCK_RESIGNED');
      assert.is(await s.other.leader(name).current(), null, 'resigned by await using');
    });

    it("replaces a leader that stopped renewing after its lease, and never repeats or lowers an epoch", async () => {
      const name = uniqueName('leader');
      const dying = s.servers.client();
      const dead = await dying.leader(name, { candidate: 'dead', leaseMs: 600 }).campaign();
      // close() ends no term: it stops renewing, so the term ends with its lease, as a killed process's would.
      await dying.close();
      const started = performance.now();
      const next = await within(s.client.leader(name, { candidate: 'next' }).campaign(), 3_000, 'the next leader');
      const tookMs = performance.now() - started;
      assert.ok(tookMs <= 600 + 1_000, `led ${Math.round(tookMs)} ms after the leader stopped renewing`);
      // By Redis's clock: not before the dead term's lease (from its start, or a later renewal) ended.
      assert.ok(next.since - dead.since >= 600 - 1, `the next term began ${next.since - dead.since} ms after the dead one`);
      assert.ok(next.epoch > dead.epoch);
      const epochs = [dead.epoch, next.epoch];
      await next.resign();
      for (let i = 0; i < 6; i++) {
        const term = await (i % 2 === 0 ? s.other : s.client).leader(name).campaign();
        epochs.push(term.epoch);
        await term.resign();
      }
      for (let i = 1; i < epochs.length; i++) assert.ok(epochs[i]! > epochs[i - 1]!, `epochs ${epochs.join(', ')}`);
    });

    it('renews a term with its own leaseMs, and signals its loss with ERR_LOCK_LOST when its key is gone', async () => {
      const name = uniqueName('leader');
      const term = await s.client.leader(name, { leaseMs: 900 }).campaign();
      const key = leaderKeys('relock', name).lock;
      const admin = await holderOf(name);
      for (let i = 0; i < 4; i++) {
        await sleep(500);
        const pttl = await admin.pttl(key);
        assert.ok(pttl > 0 && pttl <= 900, `renewed with its own lease: PTTL ${pttl}`);
      }
      assert.not.ok(term.signal.aborted, 'held over twice its lease');
      await admin.del(key);
      await eventually(() => term.signal.aborted, 'the loss signalled', 2_000);
      assert.instance(term.signal.reason, LockLostError);
      assert.is((term.signal.reason as LockLostError).code, 'ERR_LOCK_LOST');
      await term.resign();
      const next = await within(s.other.leader(name).campaign(), 1_000, 'another campaign');
      assert.ok(next.epoch > term.epoch);
      await next.resign();
    });

    it('ends a campaign at waitMs, by its signal, and by close(); a call after close() is refused', async () => {
      const name = uniqueName('leader');
      const term = await s.client.leader(name).campaign();
      const waited = await rejects(s.other.leader(name).campaign({ waitMs: 150 }));
      assert.instance(waited, LockTimeoutError);
      assert.is(waited.code, 'ERR_LOCK_TIMEOUT');
      const controller = new AbortController();
      const aborted = s.other.leader(name).campaign({ signal: controller.signal });
      await eventually(() => s.other.waiting === 1, 'queued');
      const reason = new Error('shutting down');
      controller.abort(reason);
      assert.is(await rejects(aborted), reason);
      const closing = s.servers.client();
      const pending = rejects(closing.leader(name).campaign());
      const observed = watch(closing.leader(name));
      await eventually(() => closing.waiting === 1 && observed.seen.length === 1, 'queued and observing');
      await closing.close();
      assert.is((await pending).name, 'AbortError');
      await observed.stop();
      assertClosedBeforeCall(await rejects(closing.leader(name).campaign()), 'a campaign after close()');
      await term.resign();
    });

    it('pushes every change to every observer in order: who leads at first, each term, each end, also by lease', async () => {
      const name = uniqueName('leader');
      const mine = watch(s.client.leader(name));
      const theirs = watch(s.other.leader(name));
      await eventually(() => mine.seen.length === 1 && theirs.seen.length === 1, 'the first state');
      assert.equal(mine.seen, [null]);
      const a = await s.client.leader(name, { candidate: 'a' }).campaign();
      await eventually(() => mine.seen.length === 2 && theirs.seen.length === 2, 'the first term');
      await a.resign();
      const b = await s.other.leader(name, { candidate: 'b' }).campaign();
      await eventually(() => mine.seen.length === 4 && theirs.seen.length === 4, 'the end and the second term');
      // A term that ends by its lease publishes nothing: seen at its end, by a read.
      const dying = s.servers.client();
      await b.resign();
      const c = await dying.leader(name, { candidate: 'c', leaseMs: 500 }).campaign();
      await dying.close();
      await eventually(() => mine.seen.length === 7 && theirs.seen.length === 7, 'the third term and its end by lease', 3_000);
      const expected = [null, a, null, b, null, c, null].map((state) => (state ? { candidate: state.candidate, epoch: state.epoch, since: state.since } : null));
      assert.equal(mine.seen.map(who), expected.map(who));
      assert.equal(mine.seen, expected);
      assert.equal(theirs.seen, expected);
      await sleep(200);
      assert.is(mine.seen.length, 7, 'nothing more');
      await mine.stop();
      await theirs.stop();
    });

    it('shows who leads when it starts, and catches up on a change made while its subscriber was down', async () => {
      const name = uniqueName('leader');
      const a = await s.client.leader(name, { candidate: 'a' }).campaign();
      const observer = watch(s.other.leader(name));
      await eventually(() => observer.seen.length === 1, 'the first state');
      assert.is(observer.seen[0]?.epoch, a.epoch);
      for (const admin of s.servers.admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await a.resign();
      const b = await s.client.leader(name, { candidate: 'b' }).campaign();
      await eventually(() => observer.seen.at(-1)?.epoch === b.epoch, 'the observer catches up', 5_000);
      const epochs = observer.seen.filter((state) => state !== null).map((state) => state!.epoch);
      assert.equal(epochs, [a.epoch, b.epoch], 'no epoch twice or going back');
      await observer.stop();
      await b.resign();
    });

    it('refuses bad arguments before any I/O, naming them', async () => {
      const before = await scriptCalls();
      assert.throws(() => s.client.leader(''), RangeError);
      assert.throws(() => s.client.leader(42 as unknown as string), TypeError);
      assert.throws(() => s.client.leader('x', { candidate: '' }), /candidate/);
      assert.throws(() => s.client.leader('x', { candidate: 7 as unknown as string }), /candidate/);
      assert.throws(() => s.client.leader('x', { candidate: 'c'.repeat(1025) }), RangeError);
      assert.throws(() => s.client.leader('x', { leaseMs: 10 }), /leaseMs/);
      assert.throws(() => s.client.leader('x', { lease: 10 } as never), TypeError);
      const election = s.client.leader(uniqueName('leader'));
      assert.instance(await rejects(election.campaign({ waitMs: -1 })), RangeError);
      assert.instance(await rejects(election.campaign({ signal: 'x' as never })), TypeError);
      assert.throws(() => election.observe({ signal: 'x' as never }), TypeError);
      assert.is((await scriptCalls()) - before, 0, 'no script ran');
    });

    it('names a foreign value under the leader key, and leaves it as it was', async () => {
      const name = uniqueName('leader');
      const term = await s.client.leader(name).campaign();
      const admin = await holderOf(name);
      await term.resign();
      const key = leaderKeys('relock', name).lock;
      await admin.set(key, 'foreign');
      for (const call of [() => s.client.leader(name).campaign({ waitMs: 100 }), () => s.client.leader(name).current()]) {
        const error = await rejects(call());
        assert.instance(error, LockError);
        assert.match(error.message, 'WRONGTYPE');
      }
      assert.is(await admin.get(key), 'foreign');
      await admin.del(key);
    });
  });
}
