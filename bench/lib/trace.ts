// The hand-off timeline of a traced run: each process stamps, on the shared monotonic clock, every
// lock command it writes (EVALSHA, SET) and its reply, and every pub/sub message it receives; the
// critical sections come from the run itself. Lined up, they say where a hand-off's time goes.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { now } from './clock.ts';
import type { Interval } from './protocol.ts';
import { median } from './stats.ts';

/** [when, what, which command] */
export type TraceEvent = [number, 'send' | 'reply' | 'message', string?];

interface Patchable {
  prototype: {
    sendCommand(this: unknown, command: { name: string; args: unknown[]; promise: Promise<unknown> }, stream?: unknown): unknown;
    emit(this: unknown, event: string, ...args: unknown[]): boolean;
  };
}

/**
 * Patches every copy of ioredis a library may use (relock's, at the root, and the bench's) to stamp
 * commands and messages. Only ioredis: node-redis (simple-redis-mutex) is not traced.
 */
export function instrument(events: TraceEvent[]): void {
  const anchors = [new URL('../../src/index.ts', import.meta.url), new URL('../package.json', import.meta.url)];
  const seen = new Set<unknown>();
  for (const anchor of anchors) {
    let Redis: Patchable;
    try {
      ({ Redis } = createRequire(fileURLToPath(anchor))('ioredis') as { Redis: Patchable });
    } catch {
      continue;
    }
    if (seen.has(Redis)) continue;
    seen.add(Redis);
    const send = Redis.prototype.sendCommand;
    Redis.prototype.sendCommand = function (command, stream) {
      if (command.name === 'evalsha' || command.name === 'set') {
        const tag = `${command.name}:${String(command.args[0]).slice(0, 12)}`;
        events.push([now(), 'send', tag]);
        command.promise.then(
          () => events.push([now(), 'reply', tag]),
          () => undefined,
        );
      }
      return send.call(this, command, stream);
    };
    const emit = Redis.prototype.emit;
    Redis.prototype.emit = function (event, ...args) {
      if (event === 'message') events.push([now(), 'message']);
      return emit.call(this, event, ...args);
    };
  }
}

export interface HandOffLegs {
  handOffs: number;
  /** Share of hand-offs where the next holder's winning attempt followed a pub/sub message. */
  woken: number;
  /** Medians in milliseconds. */
  total: number;
  release: number;
  toMessage: number;
  toAttempt: number;
  attemptRoundTrip: number;
  toEnter: number;
  /** Lock commands written by all processes from the release to the next holder's entry. */
  commandsPerHandOff: number;
}

/** Lines up the sections of one lock (interval i of process p) with each process's trace. */
export function handOffLegs(sections: { process: number; interval: Interval }[], traces: TraceEvent[][]): HandOffLegs | undefined {
  const sorted = [...sections].sort((a, b) => a.interval[0] - b.interval[0]);
  const legs = { total: [] as number[], release: [] as number[], toMessage: [] as number[], toAttempt: [] as number[], attemptRoundTrip: [] as number[], toEnter: [] as number[], commands: [] as number[] };
  let woken = 0;
  for (let i = 1; i < sorted.length; i++) {
    const previous = sorted[i - 1]!;
    const next = sorted[i]!;
    const exit = previous.interval[1];
    const enter = next.interval[0];
    const from = traces[previous.process] ?? [];
    const to = traces[next.process] ?? [];
    const release = from.find((e) => e[1] === 'send' && e[0] >= exit);
    const reply = to.findLast((e) => e[1] === 'reply' && e[0] <= enter);
    const attempt = reply && to.findLast((e) => e[1] === 'send' && e[2] === reply[2] && e[0] <= reply[0]);
    if (!release || !reply || !attempt || attempt[0] < release[0]) continue;
    const message = to.find((e) => e[1] === 'message' && e[0] >= release[0] && e[0] <= attempt[0]);
    legs.total.push(enter - exit);
    legs.release.push(release[0] - exit);
    legs.attemptRoundTrip.push(reply[0] - attempt[0]);
    legs.toEnter.push(enter - reply[0]);
    if (message) {
      woken++;
      legs.toMessage.push(message[0] - release[0]);
      legs.toAttempt.push(attempt[0] - message[0]);
    }
    legs.commands.push(traces.reduce((sum, trace) => sum + trace.filter((e) => e[1] === 'send' && e[0] > release[0] && e[0] <= enter).length, 0));
  }
  if (legs.total.length === 0) return undefined;
  return {
    handOffs: legs.total.length,
    woken: woken / legs.total.length,
    total: median(legs.total),
    release: median(legs.release),
    toMessage: median(legs.toMessage),
    toAttempt: median(legs.toAttempt),
    attemptRoundTrip: median(legs.attemptRoundTrip),
    toEnter: median(legs.toEnter),
    commandsPerHandOff: median(legs.commands),
  };
}
