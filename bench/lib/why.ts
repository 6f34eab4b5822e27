// What a run's own figures say beside the tables: why a target was missed, how the load grows with
// the waiters, where a hand-off's time goes, relock before and after, the cost of diagnostics, noise.
import type { AdapterSpec } from '../adapters/types.ts';
import { BASELINE_COMMIT } from './baseline.ts';
import { C, fixed, integer, nameOf, signed, value, type Lookup, type Row } from './columns.ts';
import { TARGETS as T } from './plan.ts';
import type { ScenarioId } from './protocol.ts';
import type { ReportInput } from './report-input.ts';
import { median } from './stats.ts';
import type { HandOffLegs } from './trace.ts';

function topOf(input: ReportInput, scenario: ScenarioId, adapter: string, size: number | undefined): Map<string, number> {
  const record = input.records.find((r) => r.scenario === scenario && r.size === size && r.adapter === adapter && r.run > 0 && r.result.ok);
  return new Map(record?.result.ok ? record.result.figures.topCommands : []);
}

/** For each missed target, what this run's own figures say about where the time or the load goes. */
export function why(input: ReportInput, at: Lookup): string {
  const notes: string[] = [];
  const un = at('uncontended', 'relock');
  const floor = at('uncontended', 'floor-poll');
  if (un && floor && (un.get(C.ops) ?? 0) < T.uncontended.floor * (floor.get(C.ops) ?? 0)) {
    const bare = at('uncontended', 'relock-scripts');
    let text =
      `**Uncontended.** Both make two round trips per acquire+release, yet relock does ${fixed(un.get(C.ops)! / floor.get(C.ops)!)}× the floor's rate. ` +
      `Its client process spends ${fixed(un.get(C.clientCpu)!)} µs of CPU per round against the floor's ${fixed(floor.get(C.clientCpu)!)} µs, ` +
      `and Redis ${fixed(un.get(C.cpu)!)} µs against ${fixed(floor.get(C.cpu)!)} µs (${fixed(un.get(C.commands)!)} commands per round inside relock's two scripts against ${fixed(floor.get(C.commands)!)}).`;
    if (bare) {
      text +=
        ` relock's own two scripts through its own command wrapper, without the library around them (*relock-scripts*), do ${integer(bare.get(C.ops)!)} rounds/s ` +
        `(${fixed(bare.get(C.ops)! / floor.get(C.ops)!)}× the floor) with ${fixed(bare.get(C.clientCpu)!)} µs of client CPU and ${fixed(bare.get(C.cpu)!)} µs of Redis CPU per round. ` +
        (bare.get(C.ops)! >= floor.get(C.ops)!
          ? `The scripts alone keep up with the floor in this run, so the gap is the library around them (options, Lock and Lease objects, async context, watchdog, queues): ${fixed((1 - un.get(C.ops)! / bare.get(C.ops)!) * 100)}% of the scripts-only rate.`
          : `The scripts (their Lua, their ${fixed(bare.get(C.commands)! - floor.get(C.commands)!)} extra commands per round) thus cost ${fixed((1 - bare.get(C.ops)! / floor.get(C.ops)!) * 100)}% of the floor's rate, ` +
            `and the library around them (options, Lock and Lease objects, async context, watchdog, queues) another ${fixed(Math.max(0, 1 - un.get(C.ops)! / bare.get(C.ops)!) * 100)}% of what is left.`);
    }
    notes.push(text);
  }
  const mine = legsOf(input, 'relock');
  const contended = at('contended', 'relock');
  if (contended && ((contended.get(C.utilisation) ?? 0) < T.contended.utilisation || mine)) {
    const others = input.adapters.filter((a) => a.kind === 'peer' || a.kind === 'floor').map((a) => ({ id: a.id, legs: legsOf(input, a.id) })).filter((o): o is { id: string; legs: HandOffLegs } => o.legs !== undefined);
    const fastest = others.sort((a, b) => a.legs.total - b.legs.total)[0];
    const hold = 1 / (contended.get(C.ops)! / 1000) * contended.get(C.utilisation)!;
    let text =
      `**Contended.** Utilisation is ${fixed(contended.get(C.utilisation)!)}: with holds of about ${hold.toFixed(2)} ms, every hand-off that takes ${fixed(contended.get(C.handOffP50)!)} ms (the median) is lock time lost. ` +
      `Reaching ${T.contended.utilisation} would need hand-offs of about ${((hold * (1 - T.contended.utilisation)) / T.contended.utilisation).toFixed(2)} ms.`;
    if (mine) {
      text +=
        ` The traced run splits relock's ${mine.total.toFixed(3)} ms: ${mine.release.toFixed(3)} ms of its own code before the release is written, ${mine.toMessage.toFixed(3)} ms until the next holder's process has the message, ` +
        `${mine.toAttempt.toFixed(3)} ms of its code to write the attempt, ${mine.attemptRoundTrip.toFixed(3)} ms for that attempt's round trip and ${mine.toEnter.toFixed(3)} ms to resolve \`acquire()\`.`;
      if (fastest) {
        text +=
          ` ${fastest.id} hands off in ${fastest.legs.total.toFixed(3)} ms (${fastest.legs.release.toFixed(3)}, ${fastest.legs.toMessage.toFixed(3)}, ${fastest.legs.toAttempt.toFixed(3)}, ${fastest.legs.attemptRoundTrip.toFixed(3)}, ${fastest.legs.toEnter.toFixed(3)}).`;
      }
      text +=
        ` A release wakes the head of the queue in every process (4 here), so ${fixed(mine.commandsPerHandOff)} lock commands are written per hand-off: the losing attempts are Lua calls that queue at Redis beside the winner's, and their processes compete with the winner's for the cores.` +
        ` Even the floor, which sends nothing but one SET NX per woken waiter, does not get to ${T.contended.utilisation} this way: "publish, then the woken waiter tries" costs a message and a round trip after every release.`;
    }
    notes.push(text);
  }
  const herdSizes = input.sizes.herd.filter((size) => at('herd', 'relock', size));
  const worst = herdSizes.map((size) => ({ size, commands: at('herd', 'relock', size)!.get(C.commands)! })).sort((a, b) => b.commands - a.commands)[0];
  if (worst && worst.commands > T.herd.commands) {
    const top = topOf(input, 'herd', 'relock', worst.size);
    const evalsha = top.get('evalsha') ?? Number.NaN;
    notes.push(
      `**Herd, commands.** At ${worst.size} waiters relock makes ${fixed(evalsha)} script calls per acquisition: one winning acquire, one release and about ${fixed(evalsha - 2)} losing attempts. ` +
        `Each release is published to every process, and each wakes its queue's head; all but one lose, each loss costing the EVALSHA and the two reads inside it (${Array.from(top.entries()).filter(([name]) => name === 'pttl' || name === 'hget').map(([name, calls]) => `${name} ${calls.toFixed(2)}`).join(', ')} per acquisition). ` +
        `That count depends on the number of processes, not of waiters, which is why the load stays flat; it is also the whole margin over ${T.herd.commands}.`,
    );
  }
  return notes.length === 0 ? '' : `### Why, where a target is missed\n\nFrom this run's own figures.\n\n${notes.join('\n\n')}`;
}

/** How the load of the polling libraries grows with the waiters, beside relock's. */
export function herdGrowth(input: ReportInput, at: Lookup): string {
  const sizes = input.sizes.herd;
  const head = ['library', 'waits by', ...sizes.map((s) => `CPU µs/acq @${s}`), ...sizes.map((s) => `commands/acq @${s}`)];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`];
  for (const adapter of input.adapters) {
    const cells = sizes.map((s) => at('herd', adapter.id, s));
    if (cells.every((c) => c === undefined)) continue;
    const name = nameOf(adapter);
    lines.push(`| ${[name, adapter.waiting, ...cells.map((c) => (c?.get(C.cpu) === undefined ? '—' : fixed(c.get(C.cpu)!))), ...cells.map((c) => (c?.get(C.commands) === undefined ? '—' : fixed(c.get(C.commands)!)))].join(' | ')} |`);
  }
  return lines.join('\n');
}

export function topCommands(input: ReportInput, scenario: ScenarioId, size: number | undefined): string {
  const lines: string[] = [];
  for (const adapter of input.adapters) {
    const record = input.records.find((r) => r.scenario === scenario && r.size === size && r.adapter === adapter.id && r.result.ok);
    if (!record || !record.result.ok) continue;
    const top = record.result.figures.topCommands.map(([name, perAcq]) => `${name} ${perAcq.toFixed(2)}`).join(', ');
    lines.push(`- ${adapter.id}: ${top}`);
  }
  return lines.length === 0 ? '' : `\n\n<details><summary>Where the commands come from: the commands called most, per acquisition (first finished run)</summary>\n\n${lines.join('\n')}\n\n</details>`;
}

function legsOf(input: ReportInput, adapter: string): HandOffLegs | undefined {
  const record = input.records.find((r) => r.scenario === 'contended' && r.run === 0 && r.adapter === adapter && r.result.ok);
  return record?.result.ok ? record.result.figures.legs : undefined;
}

/** The traced runs' hand-off timelines, one column per traced library. */
export function legsTable(input: ReportInput): string {
  const traced = input.adapters.map((a) => ({ adapter: a, legs: legsOf(input, a.id) })).filter((t): t is { adapter: AdapterSpec; legs: HandOffLegs } => t.legs !== undefined);
  if (traced.length === 0) return '';
  const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(3) : '—');
  const rows: [string, (l: HandOffLegs) => string][] = [
    ['hand-off: holder leaves → next holder in', (l) => `**${ms(l.total)}**`],
    ['holder leaves → its release command written (client)', (l) => ms(l.release)],
    ['release written → pub/sub message at the next holder (Redis, network, wake-up)', (l) => ms(l.toMessage)],
    ['message → winning attempt written (client)', (l) => ms(l.toAttempt)],
    ["winning attempt's round trip (Redis, network, other processes' attempts)", (l) => ms(l.attemptRoundTrip)],
    ['attempt reply → `acquire()` resolved (client)', (l) => ms(l.toEnter)],
    ['hand-offs that followed a message', (l) => `${Math.round(l.woken * 100)}% of ${l.handOffs}`],
    ['lock commands written by all processes per hand-off', (l) => fixed(l.commandsPerHandOff)],
  ];
  const head = ['median, ms', ...traced.map((t) => nameOf(t.adapter))];
  const lines = [
    `| ${head.join(' | ')} |`,
    `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
    ...rows.map(([label, get]) => `| ${label} | ${traced.map((t) => get(t.legs)).join(' | ')} |`),
  ];
  return [
    `### Where a hand-off's time goes`,
    `One more run per pub/sub library on ioredis, traced (\`bench/lib/trace.ts\`; not among the measured runs): every process stamps, on the shared monotonic clock, each lock command it writes and its reply, and each pub/sub message it receives. Each hand-off is then split into legs: the first lock command the previous holder's process writes after leaving (its release), the next holder's winning attempt (the last command it wrote before entering) and the message in between, if any. Legs are medians over hand-offs, so they need not add up to the total.`,
    lines.join('\n'),
  ].join('\n\n');
}

/**
 * Scenario 1, before and after ("where each microsecond went"): relock against relock
 * before this change, both beside relock's own scripts without the library around them.
 */
export function beforeAfter(input: ReportInput, at: Lookup): string {
  const after = at('uncontended', 'relock');
  const before = at('uncontended', 'relock-0.1.0');
  if (!after || !before) return '';
  const commit = input.baseline?.slice(0, 7) ?? BASELINE_COMMIT;
  let text =
    `**Before and after this change.** In the same interleaved slices, relock does ${integer(value(after, C.ops))} rounds/s against ${integer(value(before, C.ops))} for relock before this change (*relock-0.1.0*, built from ${commit}): ${fixed(value(after, C.ops) / value(before, C.ops))}×. ` +
    `Per acquire+release, its client process spends ${fixed(value(after, C.clientCpu))} µs of CPU against ${fixed(value(before, C.clientCpu))} (${signed(value(after, C.clientCpu) - value(before, C.clientCpu))} µs), ` +
    `Redis ${fixed(value(after, C.cpu))} µs against ${fixed(value(before, C.cpu))} (${signed(value(after, C.cpu) - value(before, C.cpu))} µs), ` +
    `for ${fixed(value(after, C.commands))} Redis commands in ${fixed(value(after, C.scripts))} script calls against ${fixed(value(before, C.commands))} in ${fixed(value(before, C.scripts))}.`;
  const bare = at('uncontended', 'relock-scripts');
  if (bare) {
    const library = value(after, C.clientCpu) - value(bare, C.clientCpu);
    const libraryBefore = value(before, C.clientCpu) - value(bare, C.clientCpu);
    text +=
      ` Today's two scripts alone, through relock's script runner on one connection (*relock-scripts*), do ${integer(value(bare, C.ops))} rounds/s with ${fixed(value(bare, C.clientCpu))} µs of client CPU and ${fixed(value(bare, C.cpu))} µs of Redis CPU per round: ` +
      `the library around the scripts (options, Lock and Lease objects, async context, watchdog, waiting) costs ${fixed(library)} µs of client CPU per round now, against about ${fixed(libraryBefore)} µs before ` +
      `(taking the old scripts' client cost to be the new ones': both are two script calls per round, and the ${fixed(value(before, C.commands))} against ${fixed(value(after, C.commands))} Redis commands inside them are Redis's cost, not the client's).`;
  }
  return text;
}

/** Scenario 1: relock with a subscriber on every diagnostics channel against relock without. */
export function diagnosticsCost(at: Lookup): string {
  const plain = at('uncontended', 'relock');
  const traced = at('uncontended', 'relock+diagnostics');
  if (!plain || !traced) return '';
  return (
    `**Diagnostics.** With a no-op subscriber on each of relock's five diagnostics channels (*relock+diagnostics*), relock does ${integer(value(traced, C.ops))} rounds/s, ${fixed(value(traced, C.ops) / value(plain, C.ops))}× relock without subscribers in the same slices, ` +
    `and spends ${fixed(value(traced, C.clientCpu))} µs of client CPU per round against ${fixed(value(plain, C.clientCpu))} (${signed(value(traced, C.clientCpu) - value(plain, C.clientCpu))} µs); Redis sees ${fixed(value(traced, C.commands))} commands per round against ${fixed(value(plain, C.commands))}. ` +
    `That is what turning diagnostics on costs, give or take the noise of this shared machine. Without subscribers relock only reads \`hasSubscribers\` before each publication: \`node --import tsx bench/diagnostics-cost.ts\` times that guard alone, a publication to a subscriber, and acquire+release with and without subscribers on a private Redis, in nanoseconds.`
  );
}

/** floor-poll runs twice in scenario 1, as two libraries: how far apart they land is the noise. */
export function noise(input: ReportInput, all: Row[]): string {
  const first = all.find((row) => row.adapter.id === 'floor-poll')?.medians.get(C.ops);
  const again = input.records.filter((r) => r.scenario === 'uncontended' && r.adapter === 'floor-poll#2' && r.run > 0 && r.result.ok);
  if (first === undefined || again.length === 0) return '';
  const second = median(again.map((r) => (r.result.ok ? r.result.figures.opsPerSec : Number.NaN)));
  const spread = (Math.max(first, second) / Math.min(first, second) - 1) * 100;
  return `How much to trust a ratio here: *floor-poll* also ran a second time in every repetition, interleaved like another library; its two medians, ${integer(first)} and ${integer(second)} rounds/s, differ by ${spread.toFixed(0)}%. Differences of that order between libraries are the noise of this shared machine, not the libraries.`;
}
