// Observing an election: every change pushed by its channel (a term began, a term was given up), a
// read where a message cannot tell (a term that ended by its lease, a reconnected subscriber), and
// each state ordered by its place in the election's history, so nothing is shown twice or out of order.
import type { LeaderInfo } from '../api.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { Listener } from '../runtime/waiting.ts';
import { parseChange, type Inspection, type LeaderCommands } from './commands.ts';
import type { LeaderKeys } from './keys.ts';

/** A state's place in the election's history: a term (its epoch, 0), or no term after every one up to an epoch (epoch, 1). */
type Version = readonly [epoch: number, ended: 0 | 1];

const after = (a: Version, b: Version | undefined) => b === undefined || a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

/** A failed read is tried again after these, the last one over and over (a subscriber that comes back reads at once). */
const RETRY_MS = [100, 250, 500, 1_000];

/**
 * Who leads when iterated, then every change until `signal` aborts, the loop breaks or the client
 * closes. The first read's failure (or the subscription's) rejects; later ones are tried again.
 */
export async function* observeElection(runtime: Runtime, commands: LeaderCommands, keys: LeaderKeys, signal: AbortSignal | undefined): AsyncGenerator<LeaderInfo | null> {
  const queue: (LeaderInfo | null)[] = [];
  let shown: Version | undefined;
  /** Messages (and reconnects) heard: a read during which one came may be older than what it said. */
  let heard = 0;
  let ended = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let wakeConsumer: (() => void) | undefined;

  const push = (state: LeaderInfo | null, version: Version) => {
    if (!after(version, shown)) return;
    shown = version;
    queue.push(state);
    wakeConsumer?.();
  };
  const readIn = (ms: number) => {
    clearTimeout(timer);
    timer = setTimeout(() => void read(), ms).unref();
  };
  const apply = (inspection: Inspection) => {
    if (inspection.kind === 'leading') {
      push(inspection.leader, [inspection.leader.epoch, 0]);
      // Its lease's end, seen by a read: a leader that died publishes nothing.
      if (inspection.pttlMs >= 0) readIn(inspection.pttlMs + 1);
      return;
    }
    clearTimeout(timer);
    // Nothing was heard while it was read: nobody leads now, whatever was shown (a term that ended by
    // its lease, or every term lost with a restarted Redis).
    push(null, [Math.max(inspection.last, shown?.[0] ?? 0), 1]);
  };
  /** Reads until no message came meanwhile; `first` rejects on a failure instead of trying again. */
  const read = async (first = false): Promise<void> => {
    while (!ended) {
      const before = heard;
      let inspection: Inspection;
      try {
        inspection = await commands.inspect(keys);
      } catch (error) {
        if (first) throw error;
        if (!ended) readIn(RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]!);
        return;
      }
      failures = 0;
      if (ended || heard === before) return ended ? undefined : apply(inspection);
    }
  };
  const listener: Listener = {
    message(message) {
      heard++;
      const change = parseChange(message);
      if (change?.kind === 'elected') {
        push(change.leader, [change.leader.epoch, 0]);
        // When its lease ends, unless a message comes first.
        void read();
      } else if (change?.epoch !== undefined && shown?.[0] === change.epoch && shown[1] === 0) {
        clearTimeout(timer);
        push(null, [change.epoch, 1]);
      } else void read();
    },
    resubscribed() {
      heard++;
      void read();
    },
  };

  const stop = () => {
    ended = true;
    wakeConsumer?.();
  };
  signal?.addEventListener('abort', stop, { once: true });
  runtime.closed.addEventListener('abort', stop, { once: true });
  let unlisten: (() => void) | undefined;
  try {
    if (signal?.aborted || runtime.closed.aborted) return;
    runtime.firstUse();
    unlisten = await runtime.waiting.listen(keys.channel, listener);
    await read(true);
    while (!ended) {
      if (queue.length > 0) {
        yield queue.shift()!;
        continue;
      }
      await new Promise<void>((resolve) => (wakeConsumer = resolve));
      wakeConsumer = undefined;
    }
  } finally {
    ended = true;
    clearTimeout(timer);
    unlisten?.();
    signal?.removeEventListener('abort', stop);
    runtime.closed.removeEventListener('abort', stop);
  }
}
