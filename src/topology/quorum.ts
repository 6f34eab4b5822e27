// The quorum seam: one script or read on every master at once, decided once a majority of the masters
// agrees on its outcome, or once none can (a slow master is waited for while its answer can still
// make the majority, within the operation's validity), and the rule of when an operation settles (a
// failed attempt's undo, a release's write, a re-entry's new lease).
import { randomUUID } from 'node:crypto';
import type { ReenterOutcome } from '../runtime/hold.ts';
import { isReplyError } from '../runtime/script.ts';
import { noop, settledWithin } from '../runtime/waits.ts';
import { reentry } from './quorum-decide.ts';
import { count, driftMs, gather, pending, quorumOf, SILENT_MS, type Decide, type Master, type Reply } from './quorum-replies.ts';

/**
 * How long, once a release is decided, the masters that have not answered its write yet are waited
 * for (each also until it is known down or silent): a release was sent to every master, and one that
 * answers later gives the hold up then; this only bounds how long the caller waits for it.
 */
const RELEASE_SETTLE_MS = 50;

/** How often a wait for an undo looks whether its master went silent or down. */
const SILENCE_CHECK_MS = 100;

/** Whether a master is worth waiting for: not known down, and not silent for SILENT_MS. */
const usable = (master: Master) => !master.down() && !master.runner.silentFor(SILENT_MS);

/**
 * What the commands of every Redlock lock kind share: the masters and their majority, unique release
 * messages, the masters a release publishes on, the gate, the settling of a call on every master
 * by a rule (settle; the rules per outcome are quorum-decide.ts's), and when a failed attempt's
 * undo and a release have settled (undone, settleAll).
 */
export class Quorum {
  readonly masters: readonly Master[];
  /** The majority: floor(n / 2) + 1. */
  readonly quorum: number;
  /** The publish command ("publish", or "spublish"). */
  readonly publish: string;
  /** Master indexes sorted by host:port. */
  readonly #byLabel: readonly number[];
  /** Release messages are unique (`rl:<nonce>:<seq>`), so a subscriber counts each release's copies. */
  readonly #nonce = randomUUID().slice(0, 8);
  #seq = 0;
  /** Acquire calls still out when their attempt was decided, by `master|key|owner`, until they settle. */
  readonly #out = new Map<string, Promise<void>>();

  constructor(masters: readonly Master[], publish: string) {
    this.masters = masters;
    this.quorum = quorumOf(masters.length);
    this.publish = publish;
    this.#byLabel = [...masters.keys()].sort((a, b) => (masters[a]!.label < masters[b]!.label ? -1 : 1));
  }

  /**
   * What a majority of masters has at least, of one figure per master that answered (a time to live,
   * a hold count): the quorum-th largest; undefined with fewer values than a majority.
   */
  majorityHas(values: readonly number[]): number | undefined {
    return [...values].sort((a, b) => b - a)[this.quorum - 1];
  }

  /**
   * Remembers the calls of a decided acquire that have not answered (a straggler, a master that just
   * died): the owner's release on that master goes out only after them (see `after`).
   */
  outstanding(key: string, owner: string, sent: readonly (Promise<unknown> | undefined)[], replies: readonly (Reply<unknown> | undefined)[]): void {
    sent.forEach((call, i) => {
      if (call === undefined || replies[i] !== undefined) return;
      const id = `${i}|${key}|${owner}`;
      const settled = call.then(noop, noop);
      this.#out.set(id, settled);
      void settled.then(() => this.#out.get(id) === settled && this.#out.delete(id));
    });
  }

  /**
   * `write` for `owner` on master `i`, once its acquire calls still out there have settled. ioredis
   * resends a command that was out when its connection closed, after the reconnection, while a
   * release queued behind it may have failed meanwhile (maxRetriesPerRequest): without this order,
   * the acquire landed after its release and the master kept a hold nobody owned for a whole lease.
   */
  after<T>(i: number, key: string, owner: string, write: () => Promise<T>): Promise<T> {
    const out = this.#out.get(`${i}|${key}|${owner}`);
    return out ? out.then(write) : write();
  }

  /** A new release message: `rl:<nonce>:<seq>`. */
  message(): string {
    return `rl:${this.#nonce}:${++this.#seq}`;
  }

  /**
   * The publish command of each master for one release: the command on a majority, the first by
   * host:port that are usable (so the gate is one of them: a woken waiter finds the gate
   * released), '' elsewhere. The subscribers deliver a release once a majority has published it.
   */
  publishers(): string[] {
    const up = this.#byLabel.filter((i) => this.usable(i));
    const publishers = new Set((up.length >= this.quorum ? up : this.#byLabel).slice(0, this.quorum));
    return this.masters.map((_, i) => (publishers.has(i) ? this.publish : ''));
  }

  /**
   * The gate of waiters' attempts: the first master by host:port that is usable (the same in every
   * client once each has heard the silence); with none usable, the first not known down.
   */
  gate(): number | undefined {
    return this.#byLabel.find((i) => this.usable(i)) ?? this.#byLabel.find((i) => !this.masters[i]!.down());
  }

  /**
   * Whether master `i` is worth ordering on: not known down, and not silent (a command out
   * SILENT_MS without a reply: a partition or a frozen server keeps its connection up).
   */
  usable(i: number): boolean {
    return usable(this.masters[i]!);
  }

  /**
   * gather() by the majority's rule (see docs/redlock.md#a-decision-needs-a-majority-that-agrees):
   * `decide` settles the call once a majority of the masters agrees on an outcome, or once no outcome
   * can have one any more; until then a master that answers late is waited for, up to `timeoutMs`
   * (the operation's validity: what is left of the lease or of the attempt), after which the replies
   * so far decide as if every master had answered. Masters not answered by then are not waited for (a
   * failed acquire is rolled back on them when they answer).
   */
  settle<R, D>(masters: readonly Master[], call: (master: Master, index: number) => Promise<R>, decide: Decide<R, D>, timeoutMs?: number, failFast = true): Promise<D> {
    return gather(masters, call, decide, failFast, timeoutMs);
  }

  /**
   * settle() for a write that must be settled on every master, not only decided (a release, a re-entry
   * that lengthens the lease): once `decide` has decided, it still waits for each master that has not
   * answered, unless known down or silent, for `afterMs` more at most (or until `timeoutMs`). So when it
   * resolves, every master that answers within that bound has the write (see
   * docs/redlock.md#when-an-operation-settles).
   */
  async settleAll<R, D>(
    masters: readonly Master[],
    call: (master: Master, index: number) => Promise<R>,
    decide: Decide<R, D>,
    timeoutMs?: number,
    failFast = true,
    afterMs = RELEASE_SETTLE_MS,
  ): Promise<D> {
    const calls: (Promise<R> | undefined)[] = masters.map(() => undefined);
    const replied: boolean[] = masters.map(() => false);
    const decided = await this.settle(
      masters,
      (master, i) => {
        const made = (calls[i] = call(master, i));
        void made.then(
          () => (replied[i] = true),
          () => (replied[i] = true),
        );
        return made;
      },
      decide,
      timeoutMs,
      failFast,
    );
    const until = performance.now() + afterMs;
    await Promise.all(calls.map((made, i) => (made === undefined || replied[i] ? undefined : this.#landed(made, masters[i]!, until))));
    return decided;
  }

  /**
   * Sends the undo of a failed attempt to the masters listed (all by default) and waits until it has
   * settled (undone): at once where the master answered the attempt, else once it does (`sent[i]`, its
   * call, settles either way). An undo sent while the attempt is out could overtake it: the attempt's
   * EVALSHA answered NOSCRIPT and sent again as EVAL after an undo whose script the master had.
   * `validUntil` (performance.now()) is the end of the attempt's validity: see undone().
   */
  undoAfter(
    replies: readonly (Reply<unknown> | undefined)[],
    sent: readonly (Promise<unknown> | undefined)[],
    undo: (master: Master) => Promise<unknown>,
    validUntil: number,
    only?: readonly number[],
  ): Promise<void> {
    const undos: (Promise<unknown> | undefined)[] = this.masters.map(() => undefined);
    for (const i of only ?? this.masters.keys()) {
      const master = this.masters[i]!;
      const out = replies[i] === undefined ? sent[i] : undefined;
      undos[i] = out ? out.then(() => undo(master), () => undo(master)) : undo(master);
    }
    return this.undone(replies, undos, validUntil);
  }

  /**
   * Waits until the undo of a failed attempt has settled (see docs/redlock.md#when-an-operation-settles):
   * `undos[i]` is what master i was sent to give back what the attempt took (undefined: nothing to give
   * back), and `replies` what the masters had answered to the attempt when it was decided. Every master
   * that may have taken it and is not known down is waited for until its undo is answered (a master that
   * refused the attempt with an error of its own took nothing), until `validUntil` (performance.now())
   * at most: the end of the attempt's validity, after which what it took there ends with its lease
   * anyway. A master known down, or silent (a partition, a frozen server: see usable), is not waited
   * for: its undo lands on its own, after the attempt on the same connection. Never rejects.
   */
  async undone(replies: readonly (Reply<unknown> | undefined)[], undos: readonly (Promise<unknown> | undefined)[], validUntil: number): Promise<void> {
    const waits = undos.flatMap((undo, i) => {
      if (undo === undefined) return [];
      const reply = replies[i];
      const mayHold = reply === undefined || reply.ok || !isReplyError(reply.error);
      // An undo nobody waits for fails unheard: the lease ends there with its time.
      if (!mayHold || this.masters[i]!.down()) {
        undo.catch(noop);
        return [];
      }
      return [this.#landed(undo, this.masters[i]!, validUntil)];
    });
    await Promise.all(waits);
  }

  /**
   * Waits for `write` on `master` until it settles, the master is known down or silent (SILENT_MS
   * without a reply: a partition or a frozen server, which no wait of ours makes answer sooner), or
   * `until` (performance.now()). Silence is judged after the replies already received are read
   * (setImmediate), so that a busy event loop does not pass for a silent master.
   */
  async #landed(write: Promise<unknown>, master: Master, until: number): Promise<void> {
    let settled = false;
    void write.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (;;) {
      const leftMs = until - performance.now();
      if (leftMs <= 0) return;
      await settledWithin(write, Math.min(SILENCE_CHECK_MS, leftMs));
      if (settled) return;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (settled || !usable(master)) return;
    }
  }

  /**
   * Whether an acquire's replies so far decide it: a majority took it; or it cannot be taken, and
   * either a majority answered (it is held) or too few can still answer (no quorum: once every master
   * that is up answered, so that the error says what each did).
   */
  acquireDecided(replies: readonly (Reply<unknown> | undefined)[], taken: number): boolean {
    const answered = count(replies, (reply) => reply.ok);
    const left = pending(replies);
    return taken >= this.quorum || (taken + left < this.quorum && (answered >= this.quorum || (answered + left < this.quorum && this.heard(replies))));
  }

  /**
   * Whether every master that is up (not known down, not silent) has answered: a no-quorum error,
   * once decided, waits for them (they answer at once) so that it names what they did.
   */
  heard(replies: readonly (Reply<unknown> | undefined)[]): boolean {
    return replies.every((reply, i) => reply !== undefined || !usable(this.masters[i]!));
  }

  /**
   * The fence write-back of a token (see docs/redlock.md): `call` on the masters listed (those that
   * took the hold); true once a majority of all masters confirmed it, false when they cannot (or fail).
   */
  confirmed(indexes: readonly number[], call: (master: Master) => Promise<boolean>, timeoutMs?: number): Promise<boolean> {
    return this.settle(
      indexes.map((i) => this.masters[i]!),
      call,
      (replies, done) => {
        const yes = count(replies, (reply) => reply.ok && reply.value);
        if (yes >= this.quorum) return true;
        return done || yes + pending(replies) < this.quorum ? false : undefined;
      },
      timeoutMs,
    ).catch(() => false);
  }

  /**
   * A re-entry's script on every master, decided by `reentry`, then settled on every master not known
   * down (settleAll): within the validity of the lease it gives (`leaseMs`: when the re-entry resolves,
   * every master that answers in that time has the longer lease), else within RELEASE_SETTLE_MS.
   */
  reentered(call: (master: Master) => Promise<ReenterOutcome>, leaseMs: number | undefined, what: string, lockName: string): Promise<ReenterOutcome> {
    const afterMs = leaseMs === undefined ? RELEASE_SETTLE_MS : leaseMs - driftMs(leaseMs);
    return this.settleAll(this.masters, call, reentry(this, what, lockName), undefined, true, afterMs);
  }
}
