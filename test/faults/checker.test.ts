// The checker can fail: fed synthetic logs, it reports what is wrong with them.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { check, falseLosses, latchViolations, PHANTOM_SLACK_MS, phantomHolds, summary, unexplainedLosses, type LatchRound, type NodeSection, type OwnerField } from './checker.ts';
import type { Entry } from './protocol.ts';

/** A section that read `read` and had its write accepted; its acquire() was called 1 ms before it began. */
function section(worker: number, token: number, start: number, end: number, read: number, more: Partial<Entry> = {}): Entry {
  const asked = more.asked ?? start - 1;
  return { worker, loop: 0, token, asked, start, end, waitMs: start - asked, read, write: 'ok', lostAt: null, release: 'ok', ...more };
}

/** Serial sections granted in token order, the n-th one asked for at asked[n]. */
function granted(asked: readonly number[]): Entry[] {
  return asked.map((at, i) => section(i, 10 + i, 100 + 10 * i, 105 + 10 * i, i, { asked: at }));
}

const serial = [section(0, 10, 0, 5, 0), section(1, 11, 6, 9, 1), section(2, 12, 10, 20, 2)];

describe('faults checker', (it) => {
  it('passes a serial log whose counter matches', () => {
    const report = check({ entries: serial, counter: 3 });
    assert.equal(report.problems, []);
    assert.is(report.acquisitions, 3);
    assert.is(report.completed, 3);
    assert.is(report.overlaps.length, 0);
  });

  it('counts a loss without a fault as false unless its worker stalled a renewal period', () => {
    const lost = (stallMs: number | undefined) => section(0, 10, 0, 5, 0, { lostAt: 4, lostCode: 'ERR_LOCK_LOST', ...(stallMs === undefined ? {} : { lostStallMs: stallMs }) });
    assert.equal(unexplainedLosses([section(1, 11, 6, 9, 1)], 1_000), []);
    assert.equal(unexplainedLosses([lost(400)], 1_000), []);
    assert.is(unexplainedLosses([lost(300)], 1_000).length, 1);
    assert.is(unexplainedLosses([lost(undefined)], 1_000).length, 1);
    assert.ok(unexplainedLosses([lost(20)], 1_000)[0]!.includes('ERR_LOCK_LOST'));
  });

  it('reports two holds that overlap, and the update they lost', () => {
    const entries = [section(0, 10, 0, 5, 0), section(1, 11, 4, 9, 0), section(2, 12, 10, 12, 1)];
    const report = check({ entries, counter: 2 });
    assert.is(report.overlaps.length, 1);
    assert.is(report.overlaps[0]!.earlier.token, 10);
    assert.is(report.overlaps[0]!.later.token, 11);
    assert.is(report.overlaps[0]!.ms, 1);
    assert.match(report.problems.join('\n'), /1 overlapping holds: worker 1\/loop 0 token 11 .* began 1\.0 ms before worker 0/);
    assert.match(report.problems.join('\n'), /counter is 2 but 3 sections completed/);
    assert.match(report.problems.join('\n'), /token 11 .* read 0, but 1 writes came before it/);
  });

  it('reports an overlap with a hold further back than the previous token', () => {
    const entries = [section(0, 10, 0, 50, 0), section(1, 11, 6, 9, 1), section(2, 12, 10, 20, 2)];
    const report = check({ entries, counter: 3 });
    assert.equal(
      report.overlaps.map((o) => [o.earlier.token, o.later.token]),
      [
        [10, 11],
        [10, 12],
      ],
    );
  });

  it('sees a late write after a signalled loss as stale, not as an overlap', () => {
    // Worker 0 is paused past its lease: its last effect while it held was its GET at 2; it learns
    // its loss at 40 and writes anyway; the fence rejects the token.
    const paused = section(0, 10, 0, 2, 0, { write: 'none', lostAt: 40, lostCode: 'ERR_LOCK_LOST', late: { at: 41, write: 'stale' }, release: 'ERR_LOCK_NOT_HELD' });
    const report = check({ entries: [paused, section(1, 11, 30, 33, 0), section(2, 12, 34, 36, 1)], counter: 2 });
    assert.equal(report.problems, []);
    assert.is(report.overlaps.length, 0);
    assert.is(report.staleWrites, 1);
    assert.is(report.lostLeases, 1);
    assert.is(report.longestBeliefAfterHandoverMs, 10);
  });

  it('reports a holder that wrote past a handover before its signal aborted', () => {
    const late = section(0, 10, 0, 35, 0, { write: 'stale', lostAt: 40 });
    const report = check({ entries: [late, section(1, 11, 30, 33, 0)], counter: 1 });
    assert.is(report.overlaps.length, 1);
    assert.match(report.problems.join('\n'), /unsignalled stale writes/);
  });

  it('accepts a write in flight when the loss was signalled before the next holder began', () => {
    const lost = section(0, 10, 0, 31, 0, { lostAt: 29, lostCode: 'ERR_LOCK_LOST' });
    const report = check({ entries: [lost, section(1, 11, 30, 33, 1)], counter: 2 });
    assert.equal(report.problems, []);
    assert.is(report.lostLeases, 1);
  });

  it('reports tokens that do not increase in acquisition order, and a token issued twice', () => {
    const report = check({ entries: [section(0, 11, 0, 5, 0), section(1, 10, 6, 9, 1), section(2, 10, 10, 12, 2)], counter: 3 });
    assert.match(report.problems.join('\n'), /fencing tokens not increasing in acquisition order/);
    assert.match(report.problems.join('\n'), /fencing tokens issued twice: 10 \(2 sections\)/);
  });

  it('reports a counter that moved without a logged section', () => {
    assert.match(check({ entries: serial, counter: 4 }).problems.join('\n'), /counter is 4 but 3 sections completed/);
  });

  it('reports waiters that never got the lock, and counts their wait', () => {
    const report = check({ entries: serial, counter: 3, hung: [{ worker: 4, loop: 1, waitingMs: 9_000 }] });
    assert.match(report.problems.join('\n'), /1 waiters that never got the lock: worker 4\/loop 1 waited 9000 ms/);
    assert.is(report.longestWaitMs, 9_000);
  });

  it('measures the stall after each fault until the next section begins', () => {
    const report = check({ entries: serial, counter: 3, faults: [{ kind: 'SIGKILL holder', at: 5.5 }, { kind: 'late', at: 30 }] });
    assert.equal(
      report.stalls.map((s) => s.ms),
      [0.5, Number.POSITIVE_INFINITY],
    );
    assert.is(report.longestStallMs, Number.POSITIVE_INFINITY);
  });

  it('finds no acquisition overtaken in a log served in call order', () => {
    // Callers queue at 0..40 and are served one after another in that order, under the bound.
    const report = check({ entries: granted([0, 10, 20, 30, 40]), counter: 5, maxOvertakenShare: 0.005 });
    assert.equal(report.problems, []);
    assert.is(report.overtaken.length, 0);
    assert.is(report.overtakenShare, 0);
  });

  it('reports acquisitions overtaken by a later caller, and fails a FIFO bound', () => {
    // Called at 0, 5, 6, 7; granted to the caller of 5, then 6, then 0, then 7: the caller of 0 was
    // overtaken (by the one of 6, the latest granted before it); nobody else was.
    const entries = granted([5, 6, 0, 7]);
    const reported = check({ entries, counter: 4 });
    assert.equal(reported.problems, [], 'without a bound the share is reported only');
    assert.equal(
      reported.overtaken.map((o) => [o.entry.token, o.by.token, o.ms]),
      [[12, 11, 6]],
    );
    assert.is(reported.overtakenShare, 0.25);
    const bounded = check({ entries, counter: 4, maxOvertakenShare: 0.005 });
    assert.is(bounded.problems.length, 1);
    assert.match(
      bounded.problems[0]!,
      /^1 of 4 acquisitions \(25\.0 %\) overtaken by a later caller, above the bound of 0\.50 %: worker 2\/loop 0 token 12 .* asked at 0\.0, granted after worker 1\/loop 0 token 11 .* asked 6\.0 ms later$/,
    );
  });

  it('judges a fair lock by when each waiter joined the queue on the Redis clock, where the log has it', () => {
    // Asked at 5, 6, 0, 7 in four processes, but the join of the caller of 0 reached Redis last but
    // one: served in the order of the joins, nobody was overtaken.
    const inJoinOrder = granted([5, 6, 0, 7]).map((e, i) => ({ ...e, queuedAt: 1_000 + 10 * i }));
    const fair = check({ entries: inJoinOrder, counter: 4, maxOvertakenShare: 0 });
    assert.equal(fair.problems, []);
    assert.is(fair.fifoJudged, 4);
    // Negative control: a waiter that joined first (queued at 1,000) served after one that joined
    // 20 ms later is overtaken, though its acquire() was called last.
    const queuedAt = [1_010, 1_020, 1_000, 1_030];
    const unfair = check({ entries: granted([0, 1, 7, 8]).map((e, i) => ({ ...e, queuedAt: queuedAt[i]! })), counter: 4, maxOvertakenShare: 0 });
    assert.equal(
      unfair.overtaken.map((o) => [o.entry.token, o.by.token, o.ms]),
      [[12, 11, 20]],
    );
    assert.match(unfair.problems[0]!, /token 12 .* queued at 1000\.0, granted after .* token 11 .* queued 20\.0 ms later$/);
    // An entry with no join (it took a free lock with nobody queued) is neither judged nor compared.
    const { queuedAt: _, ...noJoin } = inJoinOrder[3]!;
    const direct = check({ entries: [...inJoinOrder.slice(0, 3), { ...noJoin, asked: -50 }], counter: 4, maxOvertakenShare: 0 });
    assert.is(direct.fifoJudged, 3);
    assert.equal(direct.problems, []);
  });

  it('orders callers less than 1 ms apart as they were served', () => {
    // The second caller came 0.5 ms after the first and was served first: no order to keep.
    const report = check({ entries: granted([10.5, 10, 30]), counter: 3, maxOvertakenShare: 0 });
    assert.equal(report.problems, []);
    assert.is(report.overtaken.length, 0);
  });

  it('judges only the acquisitions asked for from fifoFrom on', () => {
    // The caller of 0 (a process still starting) was overtaken before fifoFrom; the caller of 8 was
    // overtaken by the one of 9 after it: one of the four judged.
    const entries = granted([5, 6, 0, 9, 8]);
    const report = check({ entries, counter: 5, fifoFrom: 5, maxOvertakenShare: 0.3 });
    assert.is(report.fifoJudged, 4);
    assert.equal(
      report.overtaken.map((o) => o.entry.token),
      [14],
    );
    assert.is(report.overtakenShare, 0.25);
    assert.equal(report.problems, []);
    assert.is(check({ entries, counter: 5, fifoFrom: 5, maxOvertakenShare: 0.2 }).problems.length, 1);
  });

  it('judges the grant order by token, as Redis granted', () => {
    // Logged out of order, the same grants as above: the caller of 0 was overtaken twice, counted once.
    const entries = granted([5, 6, 0, 7]).reverse();
    const report = check({ entries, counter: 4 });
    assert.equal(
      report.overtaken.map((o) => o.entry.token),
      [12],
    );
  });

  it('prints one summary line with the figures the issue asks for', () => {
    const line = summary('kill', check({ entries: serial, counter: 3, faults: [{ kind: 'x', at: 5.5 }] }), 1);
    assert.is(
      line,
      'kill: acquisitions 3, overlaps 0, faults injected 1, lost leases signalled 0, longest wait 1 ms, longest stall after a fault 1 ms, overtaken 0.0 % (0 of 3)',
    );
    const fifo = summary('fair', check({ entries: granted([5, 6, 0, 7]), counter: 4 }), 0);
    assert.match(fifo, /, overtaken 25\.0 % \(1 of 4\)$/);
  });
});

describe('faults checker: node faults (false losses, phantom holds)', (it) => {
  /** A section of client 0 on `nodes`, held [10, 20], released at 21, unless `more` says otherwise. */
  const held = (nodes: string[], more: Partial<NodeSection> = {}): NodeSection => ({
    client: 0,
    token: 1,
    names: ['a'],
    nodes,
    asked: 9,
    start: 10,
    end: 20,
    lostAt: null,
    release: 'ok',
    releasedAt: 21,
    ...more,
  });
  const lost = { lostAt: 15, lostCode: 'ERR_LOCK_LOST', release: 'ERR_LOCK_NOT_HELD' } as const;

  it('counts a loss on healthy nodes as false, and one with a key on the faulted node apart', () => {
    const sections = [held(['m1'], lost), held(['m2']), held(['m2'], lost), held(['m1', 'm2'], lost), held(['m1', 'm3'], lost)];
    const found = falseLosses(sections, new Set(['m2']));
    assert.equal(found.lost, [sections[0], sections[4]]);
    assert.is(found.lostOnFaulted, 2);
    assert.equal(found.refused, []);
  });

  it('counts a release refused as not held without a signalled loss, on healthy nodes only', () => {
    const refused = held(['m1'], { release: 'ERR_LOCK_NOT_HELD' });
    const found = falseLosses([refused, held(['m2'], { release: 'ERR_LOCK_NOT_HELD' }), held(['m1'], lost)], new Set(['m2']));
    assert.equal(found.refused, [refused]);
    assert.is(found.lost.length, 1);
  });

  it('passes a run whose only losses are on the faulted node, and a Redlock quorum with a silent minority judged healthy', () => {
    assert.equal(falseLosses([held(['m2'], lost), held(['m1'])], new Set(['m2'])).lost, []);
    assert.is(falseLosses([held(['quorum'], lost)], new Set()).lost.length, 1);
    // Redlock: a lease on a bare majority with the faulted master among it is excused; on a healthy majority it is not.
    const bare = held(['quorum'], { ...lost, heldOn: { masters: ['m0', 'm1'], quorum: 2 } });
    const whole = held(['quorum'], { ...lost, heldOn: { masters: ['m0', 'm1', 'm2'], quorum: 2 } });
    assert.equal(falseLosses([bare, whole], new Set(['m0'])).lost, [whole]);
  });

  const client = '11111111-1111-4111-8111-111111111111';
  const field = (name: string, remainingMs: number, hold = '22222222-2222-4222-8222-222222222222'): OwnerField => ({ node: 'm1', key: `p:{${name}}`, name, owner: `${client}:${hold}`, remainingMs });

  it('finds an owner field of a client that released every lease of that name cleanly', () => {
    assert.equal(phantomHolds([field('a', 900)], [], { at: 1_000, leaseMs: 1_000 }).length, 1);
    // Another name's unclean end excuses nothing here.
    assert.equal(phantomHolds([field('a', 900)], [{ clientId: client, name: 'b', at: 990 }], { at: 1_000, leaseMs: 1_000 }).length, 1);
  });

  it('excuses a field a lost lease or a failed release may leave, for a lease from then, and no longer', () => {
    const unclean = [{ clientId: client, name: 'a', at: 800 }];
    // The field ends by 1_000 + 700 = 1_700 <= 800 + 1_000 (+ slack): a lease still running out.
    assert.equal(phantomHolds([field('a', 700)], unclean, { at: 1_000, leaseMs: 1_000 }), []);
    assert.equal(phantomHolds([field('a', 800 + PHANTOM_SLACK_MS)], unclean, { at: 1_000, leaseMs: 1_000 }), []);
    // Ends later than any lease from the excuse: renewed by nobody's lease, so a phantom.
    assert.equal(phantomHolds([field('a', 900)], unclean, { at: 1_000, leaseMs: 1_000 }).length, 1);
    // No expiry at all: a phantom whatever excuses it.
    assert.equal(phantomHolds([field('a', -1)], unclean, { at: 1_000, leaseMs: 1_000 }).length, 1);
  });

  it('excuses the fields of leases alive at a checkpoint', () => {
    assert.equal(phantomHolds([field('a', 900)], [], { at: 1_000, leaseMs: 1_000, live: new Set([`${client} a`]) }), []);
    assert.equal(phantomHolds([field('b', 900)], [], { at: 1_000, leaseMs: 1_000, live: new Set([`${client} a`]) }).length, 1);
  });
});

describe('faults checker: count-down latch', (it) => {
  const round = (released: (number | null)[], more: Partial<LatchRound> = {}): LatchRound => ({ count: 3, calls: [10, 20, 30], openedAt: 31, released, started: 0, ...more });

  it('passes waiters let through after the last count-down was called, within the bound', () => {
    assert.equal(latchViolations([round([31, 40, 500])], 2_000), { early: [], stuck: 0, longestWakeMs: 469 });
  });

  it('counts a waiter let through before the count-th count-down was called as early', () => {
    const found = latchViolations([round([25, 40])], 2_000);
    assert.equal(found.early, [{ ms: 5, calledBy: 2 }]);
  });

  it('counts a waiter never let through, or let through past the bound, as stuck', () => {
    assert.is(latchViolations([round([null, 3_000])], 2_000).stuck, 2);
    assert.is(latchViolations([round([null], { openedAt: null })], 2_000).stuck, 1);
  });
});
