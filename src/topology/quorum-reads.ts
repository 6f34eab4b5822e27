// The reads of a Redlock lock, each answered by the majority: locked when a majority holds it, the
// time to live and the hold count that a majority has.
import { notALockHash } from '../runtime/script.ts';
import { Quorum } from './quorum.ts';
import { answeredError, count, gather, noQuorum, type Master } from './quorum-replies.ts';

/** The key of a lock hash (a lock's, a fair lock's quorum hold). */
type HashKey = { readonly lock: string };

export class QuorumReads extends Quorum {
  /** Locked when a majority of masters hold the lock hash. */
  isLocked(keys: HashKey): Promise<boolean> {
    const n = this.masters.length;
    return gather(
      this.masters,
      ({ runner }) => runner.read<string>('type', keys.lock),
      (replies, done) => {
        for (const reply of replies) {
          if (reply?.ok && reply.value !== 'hash' && reply.value !== 'none') {
            throw notALockHash(keys.lock, reply.value);
          }
        }
        if (count(replies, (reply) => reply.ok && reply.value === 'hash') >= this.quorum) return true;
        if (count(replies, (reply) => reply.ok && reply.value === 'none') > n - this.quorum) return false;
        if (!done) return undefined;
        throw answeredError(replies) ?? noQuorum(`Lock at "${keys.lock}" could not be read`, this.masters, replies);
      },
      true,
    );
  }

  /** How long a majority keeps holding it: the quorum-th longest time to live; null when no majority holds it. */
  async remainingTtlMs(keys: HashKey): Promise<number | null> {
    const ttls = await this.#all(keys, (runner) => runner.read<number>('pttl', keys.lock), 'read');
    if (!(await this.isLocked(keys))) return null;
    const held = ttls.filter((ttl) => ttl !== -2).map((ttl) => (ttl === -1 ? Number.POSITIVE_INFINITY : ttl));
    return this.majorityHas(held) ?? null;
  }

  /** The owner's count that a majority has (the quorum-th largest). */
  async holdCount(keys: HashKey, owner: string): Promise<number> {
    const counts = (await this.#all(keys, (runner) => runner.read<string | null>('hget', keys.lock, owner), 'read')).map((value) => Number(value ?? 0));
    return this.majorityHas(counts) ?? 0;
  }

  /** A read on every master, all answers (a majority at least) once every master answered or failed. */
  #all<R>(keys: HashKey, read: (runner: Master['runner']) => Promise<R>, what: string): Promise<R[]> {
    return gather(
      this.masters,
      ({ runner }) => read(runner),
      (replies, done) => {
        if (!done) return undefined;
        const values = replies.filter((reply) => reply?.ok).map((reply) => (reply as { value: R }).value);
        if (values.length >= this.quorum) return values;
        throw answeredError(replies) ?? noQuorum(`Lock at "${keys.lock}" could not be ${what}`, this.masters, replies);
      },
      true,
    );
  }
}
