// The family's checkers can fail: fed synthetic logs, the semaphore, read-write lock and multi-lock
// checks report what is wrong with them, and pass what is allowed.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { checkKind, checkMulti, checkReadWrite, checkSemaphore, peak, summary } from './checker.ts';
import type { Entry, MemberSection } from './protocol.ts';

/** A completed section [start, end] with token `token`; `more` overrides any field. */
function section(worker: number, token: number, start: number, end: number, more: Partial<Entry> = {}): Entry {
  return { worker, loop: 0, token, asked: start - 1, start, end, waitMs: 1, read: 0, write: 'ok', lostAt: null, release: 'ok', ...more };
}

const member = (name: string, token: number, read: number, more: Partial<MemberSection> = {}): MemberSection => ({ name, token, read, write: 'ok', ...more });

describe('faults checker: semaphore', (it) => {
  it('passes sections that never hold more than the permits at once', () => {
    // 3 permits: 2 + 1 at once, then 1 + 2 after the first ended (at 10, exactly when the next began).
    const entries = [section(0, 1, 0, 10, { permits: 2 }), section(1, 2, 5, 20, { permits: 1 }), section(2, 3, 10, 15, { permits: 2 })];
    const report = checkSemaphore({ entries, counter: 3, permits: 3 });
    assert.equal(report.problems, []);
    assert.is(report.overlaps.length, 0);
    assert.is(report.completed, 3);
  });

  it('reports the section that took permits beyond the limit, beside the heaviest one holding', () => {
    const entries = [section(0, 1, 0, 10, { permits: 1 }), section(1, 2, 2, 20, { permits: 2 }), section(2, 3, 5, 8, { permits: 1 })];
    const report = checkSemaphore({ entries, counter: 3, permits: 3 });
    assert.is(report.overlaps.length, 1);
    assert.is(report.overlaps[0]!.later.token, 3);
    assert.is(report.overlaps[0]!.earlier.token, 2);
    assert.is(report.overlaps[0]!.ms, 3);
    assert.match(report.problems.join('\n'), /1 sections beyond the 3 permits: worker 2\/loop 0 token 3 .* took 1 permits 3\.0 ms before worker 1\/loop 0 token 2 .*\(2 permits\) ended/);
  });

  it('counts one permit for a section that does not say, and reports one section over the limit alone', () => {
    assert.is(checkSemaphore({ entries: [section(0, 1, 0, 10), section(1, 2, 5, 9)], counter: 2, permits: 1 }).overlaps.length, 1);
    assert.is(checkSemaphore({ entries: [section(0, 1, 0, 10, { permits: 3 })], counter: 1, permits: 2 }).overlaps.length, 1);
  });

  it('ends a SIGSTOPped worker\'s section at the stop when its storage command was sent before it, and only then', () => {
    // Worker 0 sent its INCR at 9 and was stopped at 10; the reply came after SIGCONT (at 1200), when
    // worker 1, whose lease began at 1100 after worker 0's had expired, held the one permit.
    const collateral = section(0, 1, 0, 1_200, { permits: 1, sentAt: 9 });
    const next = section(1, 2, 1_100, 1_150, { permits: 1 });
    const faults = [{ kind: 'SIGSTOP holder', at: 10, worker: 0 }];
    const input = { entries: [collateral, next], counter: 2, permits: 1, counters: {}, faults };
    assert.is(checkSemaphore(input).overlaps.length, 1, 'without the stop taken into account: an excess');
    assert.is(checkKind('semaphore', input).overlaps.length, 0, 'its effect came before the stop');
    // Sent after the stop was recorded (the worker ran on): it still ends when its reply came.
    const late = { ...input, entries: [{ ...collateral, sentAt: 11 }, next] };
    assert.is(checkKind('semaphore', late).overlaps.length, 1);
    // Another worker's stop changes nothing.
    assert.is(checkKind('semaphore', { ...input, faults: [{ kind: 'SIGSTOP holder', at: 10, worker: 3 }] }).overlaps.length, 1);
  });

  it('lets a holder whose loss was signalled stop counting from then on', () => {
    // Paused past its lease: its last effect at 2, its loss learnt at 40, long after others began.
    const paused = section(0, 1, 0, 2, { permits: 2, write: 'none', lostAt: 40, release: 'ERR_LOCK_NOT_HELD' });
    const report = checkSemaphore({ entries: [paused, section(1, 2, 30, 35, { permits: 2 })], counter: 1, permits: 2 });
    assert.equal(report.problems, []);
    assert.is(report.lostLeases, 1);
  });

  it('reports a token issued twice, a counter that does not match, and hung waiters', () => {
    const report = checkSemaphore({
      entries: [section(0, 1, 0, 5), section(1, 1, 6, 9)],
      counter: 3,
      permits: 2,
      hung: [{ worker: 3, loop: 0, waitingMs: 5_000 }],
    });
    const text = report.problems.join('\n');
    assert.match(text, /fencing tokens issued twice: 1 \(2 sections\)/);
    assert.match(text, /counter is 3 but 2 sections completed/);
    assert.match(text, /1 waiters that never got the lock: worker 3\/loop 0 waited 5000 ms/);
  });

  it('allows a SIGKILL to cut at most `permits` INCRs from the log, never a lost one', () => {
    const entries = [section(0, 1, 0, 5), section(1, 2, 6, 9)];
    const killed = [{ kind: 'SIGKILL holder', at: 7, worker: 0 }];
    assert.equal(checkSemaphore({ entries, counter: 4, permits: 2, faults: killed }).problems, []);
    assert.match(checkSemaphore({ entries, counter: 5, permits: 2, faults: killed }).problems.join('\n'), /counter is 5 but 2 sections completed/);
    assert.match(checkSemaphore({ entries, counter: 1, permits: 2, faults: killed }).problems.join('\n'), /counter is 1 but 2 sections completed/);
    assert.match(checkSemaphore({ entries, counter: 3, permits: 2 }).problems.join('\n'), /counter is 3 but 2 sections completed/);
  });
});

describe('faults checker: read-write lock', (it) => {
  // Writes read-modify-write the counter (0 -> 1 -> 2); reads only read it, twice.
  const w1 = section(0, 10, 0, 10, { mode: 'write', read: 0 });
  const r1 = section(1, 10, 11, 30, { mode: 'read', read: 1, reread: 1, write: 'none' });
  const r2 = section(2, 10, 12, 25, { mode: 'read', read: 1, reread: 1, write: 'none' });
  const w2 = section(3, 20, 31, 40, { mode: 'write', read: 1 });

  it('passes reads beside reads, and writes alone', () => {
    const report = checkReadWrite({ entries: [w1, r1, r2, w2], counter: 2 });
    assert.equal(report.problems, []);
    assert.is(report.acquisitions, 4);
    assert.is(report.completed, 2);
  });

  it('reports a read that began during a write, and a write that began during a read', () => {
    const early = section(1, 10, 8, 30, { mode: 'read', read: 1, reread: 1, write: 'none' });
    const report = checkReadWrite({ entries: [w1, early, r2, w2], counter: 2 });
    assert.is(report.overlaps.length, 1);
    assert.match(report.problems.join('\n'), /1 sections beside a write: read worker 1\/loop 0 token 10 .* began 2\.0 ms before write worker 0/);
    const intruder = section(3, 20, 20, 40, { mode: 'write', read: 1 });
    const second = checkReadWrite({ entries: [w1, r1, r2, intruder], counter: 2 });
    assert.is(second.overlaps.length, 1);
    assert.is(second.overlaps[0]!.later.token, 20);
    assert.is(second.overlaps[0]!.earlier.mode, 'read');
  });

  it('reports two writes at once once, with the update they lost', () => {
    const both = section(3, 20, 5, 40, { mode: 'write', read: 0 });
    const report = checkReadWrite({ entries: [w1, both], counter: 1 });
    assert.is(report.overlaps.length, 1);
    const text = report.problems.join('\n');
    assert.match(text, /counter is 1 but 2 sections completed/);
    assert.not.match(text, /overlapping holds/);
  });

  it('reports a reader that saw the counter change, and write tokens that do not increase', () => {
    const torn = section(1, 10, 11, 30, { mode: 'read', read: 1, reread: 2, write: 'none' });
    const late = section(3, 5, 31, 40, { mode: 'write', read: 1 });
    const text = checkReadWrite({ entries: [w1, torn, late], counter: 2 }).problems.join('\n');
    assert.match(text, /1 read sections that saw the counter change: worker 1\/loop 0 token 10 .* read 1, then 2/);
    assert.match(text, /fencing tokens not increasing in acquisition order/);
  });

  it('lets a paused writer whose loss was signalled be followed by readers', () => {
    const paused = section(0, 10, 0, 2, { mode: 'write', read: 0, write: 'none', lostAt: 50, late: { at: 51, write: 'stale' } });
    const reader = section(1, 10, 20, 30, { mode: 'read', read: 0, reread: 0, write: 'none' });
    const writer = section(2, 20, 31, 35, { mode: 'write', read: 0 });
    const report = checkReadWrite({ entries: [paused, reader, writer], counter: 1 });
    assert.equal(report.problems, []);
    assert.is(report.staleWrites, 1);
  });
});

describe('faults checker: multi-lock', (it) => {
  it('passes sections over disjoint members at once, and over a shared member one after another', () => {
    const entries = [
      section(0, 10, 0, 10, { members: [member('a', 10, 0), member('b', 5, 0)] }),
      section(1, 7, 2, 8, { members: [member('c', 7, 0)] }),
      section(2, 12, 11, 20, { members: [member('b', 12, 1), member('c', 9, 1)] }),
    ];
    const report = checkMulti({ entries, counter: 0, counters: { a: 1, b: 2, c: 2 } });
    assert.equal(report.problems, []);
    assert.is(report.overlaps.length, 0);
    assert.is(report.completed, 5);
  });

  it('reports two sections that overlap on a shared member, by member', () => {
    const entries = [
      section(0, 10, 0, 10, { members: [member('a', 10, 0), member('b', 5, 0)] }),
      section(1, 12, 8, 20, { members: [member('b', 12, 0), member('c', 9, 0)] }),
    ];
    const report = checkMulti({ entries, counter: 0, counters: { a: 1, b: 1, c: 1 } });
    assert.is(report.overlaps.length, 1);
    assert.is(report.overlaps[0]!.earlier.token, 5, "member b's own token");
    const text = report.problems.join('\n');
    assert.match(text, /member b: 1 overlapping holds: worker 1\/loop 0 token 12 .* began 2\.0 ms before worker 0\/loop 0 token 5/);
    assert.match(text, /member b: counter is 1 but 2 sections completed/);
    assert.not.match(text, /member [ac]:/);
  });

  it("reports a member's unsignalled stale write, and a section without members", () => {
    const entries = [
      section(0, 10, 0, 10, { members: [member('a', 10, 0, { write: 'stale' })] }),
      section(1, 11, 20, 30),
    ];
    const text = checkMulti({ entries, counter: 0, counters: {} }).problems.join('\n');
    assert.match(text, /member a: 1 unsignalled stale writes/);
    assert.match(text, /1 sections without members/);
  });

  it('counts late writes per member as stale, and prints the common summary line', () => {
    const paused = section(0, 10, 0, 2, { write: 'none', lostAt: 40, members: [member('a', 10, 0, { write: 'none', late: { at: 41, write: 'stale' } })] });
    const next = section(1, 11, 30, 33, { members: [member('a', 11, 0)] });
    const report = checkMulti({ entries: [paused, next], counter: 0, counters: { a: 1 } });
    assert.equal(report.problems, []);
    assert.is(report.staleWrites, 1);
    assert.is(summary('multi', report, 0), 'multi: acquisitions 2, overlaps 0, faults injected 0, lost leases signalled 1, longest wait 1 ms, longest stall after a fault -, overtaken 0.0 % (0 of 0)');
  });
});

describe('faults checker: peak', (it) => {
  it('finds the most weight held at once, a holder counting until its last effect or its signalled loss', () => {
    // At 13: [5, 20], [10, 15] and [13, 16]; [12, 14] learnt its loss at 12.5 (else it would be 4).
    const entries = [section(0, 1, 0, 10, { permits: 3 }), section(1, 2, 5, 20), section(2, 3, 10, 15), section(3, 4, 12, 14, { lostAt: 12.5 }), section(4, 5, 13, 16)];
    assert.is(peak(entries), 3);
    assert.is(peak(entries, (e) => e.permits ?? 1), 4, 'at 5: 3 permits and 1');
  });
});
