// The majority's rules, one per outcome, for every kind: what the masters' answers to an attempt
// mean (held with which token, busy for how long, no quorum, and the undo and token write-back it
// asks of the kind), and when a re-entry, a release, a renewal and a force-release are decided.
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import { answeredError, count, noQuorum, pending, type Decide, type Master } from './quorum-replies.ts';

/** Where the masters were split between owners, how soon to try again: a few ms, at random (no lockstep). */
export const splitRetryMs = (): number => 2 + Math.floor(Math.random() * 10);

/** The masters and their majority (a Quorum). */
export interface Majority {
  readonly masters: readonly Master[];
  readonly quorum: number;
}

/** One master's answer to an attempt, as the acquire decision reads it (undefined: failed or not answered). */
export type Vote = { readonly took: true; readonly token: number } | { readonly took: false; readonly retryMs: number; readonly holder: string };

/** How an attempt of one kind is undone and its token confirmed, for decideAcquire. */
export interface AttemptUndo {
  /** Gives the attempt back on the masters listed (every master when omitted), settled before it resolves; never rejects. */
  rollback(only?: readonly number[]): Promise<void>;
  /** Raises the fence to `token` on the masters that took the attempt: true once a majority confirmed it. */
  fenceUp(token: number, taken: readonly number[]): Promise<boolean>;
  /** What an attempt that too few masters answered throws (ERR_LOCK_NO_QUORUM, or a master's reply error). */
  unanswered(): unknown;
}

/** The acquire decision: held with a token (`taken`: the masters that took it), or busy for up to `retryMs`. */
export type AcquireDecision = { readonly kind: 'acquired'; readonly token: number; readonly taken: readonly number[] } | { readonly kind: 'busy'; readonly retryMs: number };

/**
 * The Redlock acquire decision, one for every kind. Held when a majority took the attempt: its token
 * is the largest of theirs, confirmed on a majority before the lease is handed out (a majority that
 * proposed that very value wrote it already); when it cannot be, everything is given back and the
 * attempt is busy for a few ms. Not held: given back wherever it was not refused (taken, failed, or
 * not answered yet), settled before the caller hears of it; no quorum when too few masters answered;
 * else busy, held by one holder on a majority until enough refusals may have ended (a release wakes
 * it earlier), or split between holders (nobody will publish) for a few random ms, out of step.
 */
export async function decideAcquire(votes: readonly (Vote | undefined)[], quorum: number, undo: AttemptUndo): Promise<AcquireDecision> {
  const taken: number[] = [];
  const tokens: number[] = [];
  const refusals: Extract<Vote, { took: false }>[] = [];
  votes.forEach((vote, i) => {
    if (vote?.took) {
      taken.push(i);
      tokens.push(vote.token);
    } else if (vote) refusals.push(vote);
  });
  if (taken.length < quorum) {
    await undo.rollback(votes.flatMap((vote, i) => (vote && !vote.took ? [] : [i])));
    if (taken.length + refusals.length < quorum) throw undo.unanswered();
    const holders = new Map<string, number>();
    for (const { holder } of refusals) holders.set(holder, (holders.get(holder) ?? 0) + 1);
    const held = [...holders.values()].some((n) => n >= quorum);
    // Until as many refusals as it lacks may have ended: the needed-th shortest.
    const untilMs = refusals.map((refusal) => refusal.retryMs).sort((a, b) => a - b)[quorum - taken.length - 1]!;
    return { kind: 'busy', retryMs: held ? untilMs : Math.min(untilMs, splitRetryMs()) };
  }
  return confirmHeld(taken, tokens, quorum, undo);
}

/**
 * An attempt a majority took (`taken`, with the token each proposed): held with the largest token,
 * once it is confirmed on a majority (a majority that proposed that very value wrote it already);
 * when it cannot be, given back everywhere and busy for a few ms.
 */
export async function confirmHeld(taken: readonly number[], tokens: readonly number[], quorum: number, undo: Pick<AttemptUndo, 'rollback' | 'fenceUp'>): Promise<AcquireDecision> {
  const token = Math.max(...tokens);
  if (tokens.filter((t) => t === token).length < quorum && !(await undo.fenceUp(token, taken).catch(() => false))) {
    await undo.rollback();
    return { kind: 'busy', retryMs: splitRetryMs() };
  }
  return { kind: 'acquired', token, taken };
}

/** Re-entry: entered where a majority still holds it (the largest count), gone where a majority cannot. */
export function reentry(q: Majority, what: string, lockName: string): Decide<ReenterOutcome, ReenterOutcome> {
  const n = q.masters.length;
  return (replies, done) => {
    const counts = replies.flatMap((reply) => (reply?.ok && reply.value.kind === 'entered' ? [reply.value.count] : []));
    if (counts.length >= q.quorum) return { kind: 'entered', count: Math.max(...counts) };
    if (count(replies, (reply) => reply.ok && reply.value.kind === 'gone') > n - q.quorum) return { kind: 'gone' };
    if (!done) return undefined;
    throw answeredError(replies) ?? noQuorum(what, q.masters, replies, lockName);
  };
}

/**
 * Release: released when a majority released it, or when some did and too few can answer "gone"
 * (a hold may live on a bare majority); gone when a majority held nothing, or every master answered
 * and none released.
 */
export function released(q: Majority, what: string, lockName: string): Decide<ReleaseOutcome, ReleaseOutcome> {
  return (replies, done) => {
    const lefts = replies.flatMap((reply) => (reply?.ok && reply.value.kind === 'released' ? [reply.value.left] : []));
    const gone = count(replies, (reply) => reply.ok && reply.value.kind === 'gone');
    if (gone >= q.quorum) return { kind: 'gone' };
    if (lefts.length >= q.quorum || (lefts.length > 0 && (done || gone + pending(replies) < q.quorum))) return { kind: 'released', left: Math.max(...lefts) };
    if (!done) return undefined;
    if (count(replies, (reply) => !reply.ok) === 0) return { kind: 'gone' };
    throw answeredError(replies) ?? noQuorum(what, q.masters, replies, lockName);
  };
}

/**
 * Renewal, one flag per hold: renewed when a majority of masters renewed it (true); not renewed
 * (false) once that can no longer happen: too few masters renewed it and too few are left to answer
 * (refused, failed or known down). A master that answers late is waited for while its "renewed" can
 * still make the majority: a slow master is no loss. When the batch's bound (`timeoutMs`) ends with
 * a hold still open that way, the batch fails: the watchdog tries again, and each hold's deadline
 * ends it if no majority renews it in time.
 */
export function renewed(q: Majority, holds: number, what: string): Decide<readonly boolean[], boolean[]> {
  return (replies, done) => {
    const flags: boolean[] = [];
    const left = pending(replies);
    for (let i = 0; i < holds; i++) {
      const yes = count(replies, (reply) => reply.ok && reply.value[i] === true);
      if (yes >= q.quorum) flags.push(true);
      else if (yes + left < q.quorum) flags.push(false);
      else if (done) throw noQuorum(what, q.masters, replies);
      else return undefined;
    }
    return flags;
  };
}

/** Force-release: true when some master held it; false when a majority answered that none did. */
export function forced(q: Majority, what: string): Decide<boolean, boolean> {
  return (replies, done) => {
    if (!done) return undefined;
    if (count(replies, (reply) => reply.ok && reply.value) > 0) return true;
    if (count(replies, (reply) => reply.ok) >= q.quorum) return false;
    throw answeredError(replies) ?? noQuorum(what, q.masters, replies);
  };
}
