// What a quorum call is made of: the masters, their replies, and the free functions over them
// (gather every master's reply until a decision, count them, name the masters an error is about).
import { LockError } from '../errors.ts';
import { errorMessage, type ScriptRunner } from '../runtime/script.ts';

/** One master: its runner (EVALSHA/EVAL over its own connection) and its host:port. */
export interface Master {
  readonly runner: ScriptRunner;
  readonly label: string;
  /** Whether its connection is known down (reconnecting after a failure, or closed): not worth waiting for. */
  readonly down: () => boolean;
  /** The last error of its connection (kept after it recovers: see `down`). */
  readonly lastError: () => Error | undefined;
}

/** One master's reply: a value, or the error it failed with. */
export type Reply<R> = { readonly ok: true; readonly value: R } | { readonly ok: false; readonly error: unknown };

/**
 * What the replies so far decide: a value ends the operation; undefined waits for more. After the
 * last reply (`done`), decide must return a value or throw.
 */
export type Decide<R, D> = (replies: readonly (Reply<R> | undefined)[], done: boolean) => D | undefined;

/**
 * How long a master may leave a command unanswered before it counts as silent for the gate and the
 * publishers (everything else keeps sending to it): far above a loaded loopback's replies, far below
 * the 5 s command timeout a silent gate would otherwise stall its queue for.
 */
export const SILENT_MS = 500;

/** The clock-drift allowance of a lease: 1 % of it + 2 ms (the Redlock description's). */
export function driftMs(leaseMs: number): number {
  return Math.ceil(leaseMs / 100) + 2;
}

/** The majority of n masters. */
export function quorumOf(n: number): number {
  return Math.floor(n / 2) + 1;
}

/**
 * Runs `call` on every master in parallel and settles with what `decide` makes of the replies, at
 * the first reply that decides, or after `timeoutMs` with the replies so far. Replies after that are
 * not waited for (a straggler's effect is the caller's to account for: a release sent to every master
 * cleans up an acquire that landed late).
 */
export function gather<R, D>(
  masters: readonly Master[],
  call: (master: Master, index: number) => Promise<R>,
  decide: Decide<R, D>,
  failFast = false,
  timeoutMs?: number,
): Promise<D> {
  return new Promise<D>((resolve, reject) => {
    const replies: (Reply<R> | undefined)[] = masters.map(() => undefined);
    let left = masters.length;
    let settled = false;
    // After timeoutMs, the replies so far decide as if every master had answered (no answer: unreachable).
    let late = false;
    const timer = timeoutMs === undefined ? undefined : setTimeout(() => ((late = true), check()), Math.max(0, timeoutMs));
    const check = () => {
      if (settled) return;
      const done = left === 0 || late;
      try {
        const decided = decide(replies, done);
        if (decided !== undefined || done) {
          settled = true;
          clearTimeout(timer);
          if (decided === undefined) throw new Error('a quorum decision was left open after every reply');
          resolve(decided);
        }
      } catch (error) {
        settled = true;
        clearTimeout(timer);
        reject(error);
      }
    };
    masters.forEach((master, i) => {
      let promise: Promise<R>;
      try {
        // A master known down answers at once as unreachable instead of after its reconnection attempts
        // (Redlock's small per-master timeout): nothing is sent to it.
        if (failFast && master.down()) {
          const cause = master.runner.unreachableCause();
          throw new LockError(`Redis could not be reached: ${cause.message}`, { cause, code: 'ERR_LOCK_UNREACHABLE' });
        }
        promise = call(master, i);
      } catch (error) {
        promise = Promise.reject(error);
      }
      promise.then(
        (value) => {
          replies[i] = { ok: true, value };
          left--;
          check();
        },
        (error: unknown) => {
          replies[i] = { ok: false, error };
          left--;
          check();
        },
      );
    });
  });
}

/** Counts of a reply list by a classifier. */
export function count<R>(replies: readonly (Reply<R> | undefined)[], test: (reply: Reply<R>) => boolean): number {
  let n = 0;
  for (const reply of replies) if (reply && test(reply)) n++;
  return n;
}

/** Pending replies (no answer yet). */
export function pending(replies: readonly (Reply<unknown> | undefined)[]): number {
  return replies.filter((reply) => reply === undefined).length;
}

/** The first error among the replies that is not a failure to reach Redis (WRONGTYPE, NOPERM...), if any. */
export function answeredError(replies: readonly (Reply<unknown> | undefined)[]): unknown {
  for (const reply of replies) {
    if (reply && !reply.ok && !(reply.error instanceof LockError && (reply.error.code === 'ERR_LOCK_UNREACHABLE' || reply.error.code === 'ERR_LOCK_CLOSED'))) return reply.error;
  }
  return undefined;
}

/** A master as an error names it: its host:port, and (when known) whether it is down and why. */
export interface Named {
  readonly label: string;
  /** Whether its connection is known down. */
  readonly down?: () => boolean;
  /** The last error of its connection, if any (the failure to name when it is down). */
  readonly lastError?: () => Error | undefined;
}

/** An error's words: its message, else its code, else its class (node-redis's TimeoutError of a command has no message). */
function wordsOf(error: Error): string {
  const inner = (error as { errors?: unknown }).errors;
  const first = Array.isArray(inner) && inner[0] instanceof Error ? inner[0].message : undefined;
  return error.message || first || (error as { code?: string }).code || (error.name === 'Error' ? error.constructor.name : error.name);
}

/** A failure to connect, or a connection that closed, as opposed to a command left unanswered. */
const CONNECTION_FAILURE = /connect|connection|ECONN|EHOSTUNREACH|ENOTFOUND|closed|socket/i;

/** What one master did, in a no-quorum error's words, and the failure behind it (if it failed). */
function what(master: Named, reply: Reply<unknown> | undefined, describe: ((value: never) => string) | undefined): { words: string; failure?: Error } {
  const down = master.down?.() ?? false;
  // A connection's last error is kept after it recovers: it names why only while the master is down.
  const recorded = down ? master.lastError?.() : undefined;
  // (An error without words, which some clients record for a command that failed offline, names nothing.)
  const last = recorded && (recorded.message || (recorded as { code?: string }).code) ? recorded : undefined;
  if (reply === undefined) return down ? { words: `down (${last ? wordsOf(last) : 'its connection is down'})`, ...(last ? { failure: last } : {}) } : { words: 'no answer' };
  if (reply.ok) return { words: describe ? describe(reply.value as never) : 'answered' };
  const { error } = reply;
  const failure = error instanceof Error ? error : new Error(String(error));
  if (!(error instanceof LockError && error.code === 'ERR_LOCK_UNREACHABLE')) return { words: `error (${errorMessage(error)})`, failure };
  // Unreachable: the connection's own error says why (a refused connection), else the error's cause.
  const cause = last ?? (failure.cause instanceof Error ? failure.cause : undefined);
  const why = wordsOf(cause ?? failure).replace(/^Redis could not be reached: /, '');
  return { words: down || CONNECTION_FAILURE.test(why) ? `down (${why})` : `no answer (${why})`, failure: cause ?? failure };
}

/**
 * The error of an operation that could not reach a majority (ERR_LOCK_NO_QUORUM): it says, for each
 * master (host:port), what happened there: "down (why)", "no answer", "error (the error it answered)",
 * or what its answer was (`describe`: "took it", "held elsewhere"...; "answered" without one). Its
 * cause is a failure of one of the masters (a refused connection...), never a healthy one's state.
 * `what` may be '' (the message then starts with "no quorum").
 */
export function noQuorum(
  what_: string,
  masters: readonly Named[],
  replies: readonly (Reply<unknown> | undefined)[],
  lockName?: string,
  describe?: (value: never) => string,
): LockError {
  const closed = replies.some((reply) => reply && !reply.ok && reply.error instanceof LockError && reply.error.code === 'ERR_LOCK_CLOSED');
  if (closed) return new LockError('The LockClient was closed', { lockName, code: 'ERR_LOCK_CLOSED' });
  const said = replies.map((reply, i) => what(masters[i]!, reply, describe));
  const failed = said.filter((one) => one.failure !== undefined || one.words.startsWith('down')).length;
  const quiet = replies.flatMap((reply, i) => (reply === undefined && said[i]!.words === 'no answer' ? [masters[i]!.label] : []));
  const down = replies.flatMap((reply, i) => (reply === undefined && said[i]!.words.startsWith('down') ? [masters[i]!.label] : []));
  const cause =
    said.find((one) => one.failure !== undefined)?.failure ??
    (down.length > 0 ? new Error(`the connections to ${down.join(', ')} are down`) : quiet.length > 0 ? new Error(`no answer from ${quiet.join(', ')}`) : undefined);
  const needed = `${quorumOf(masters.length)} of ${masters.length} masters needed`;
  const counts = [failed > 0 ? `${failed} unreachable or failed` : '', quiet.length > 0 ? `${quiet.length} not answering` : ''].filter(Boolean).join(', ');
  return new LockError(
    `${what_ ? `${what_}: ` : ''}no quorum (${needed}${counts ? `; ${counts}` : ''}): ${said.map((one, i) => `${masters[i]!.label} ${one.words}`).join(', ')}`,
    { lockName, code: 'ERR_LOCK_NO_QUORUM', ...(cause ? { cause } : {}) },
  );
}
