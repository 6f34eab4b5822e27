// docs/benchmarks.md and docs/benchmarks/*.svg from one run's records: medians of the repetitions,
// each figure also as a ratio to the best peer, the targets checked, the machine and versions.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AdapterSpec } from '../adapters/types.ts';
import { BASELINE_COMMIT } from './baseline.ts';
import { bars, growth, type Datum } from './charts.ts';
import { HERD_SETTLE_MS, LONG_RUN_TIMEOUT_MS, MANY_SETTLE_MS, SLICES, TITLES, type Sizes } from './plan.ts';
import type { ScenarioId } from './protocol.ts';
import type { CaseFigures, CaseResult } from './runner.ts';
import type { HandOffLegs } from './trace.ts';
import { median } from './stats.ts';

export interface Record_ {
  scenario: ScenarioId;
  size: number | undefined;
  adapter: string;
  run: number;
  result: CaseResult;
}

export interface ReportInput {
  records: Record_[];
  sizes: Sizes;
  redis: { version: string; ioThreads: string };
  seconds: number;
  adapters: readonly AdapterSpec[];
  scenarios: readonly ScenarioId[];
  /** The docs folder to write benchmarks.md and benchmarks/*.svg into. */
  target: string;
  command: string;
  /** The day of the run, YYYY-MM-DD. */
  date: string;
  /** relock's version and the commit its bundle was built from, read when the run began. */
  relock: string;
  /** The machine's load averages when the run began and when it ended. */
  loadAtStart: number[];
  loadAtEnd: number[];
  /** The commit relock-0.1.0 (relock before this change) was built from, when it ran. */
  baseline?: string;
}

const bench = fileURLToPath(new URL('..', import.meta.url));

type Better = 'high' | 'low' | 'none';
interface Column {
  label: string;
  better: Better;
  get(figures: CaseFigures): number | undefined;
  format(value: number): string;
}

function fixed(value: number): string {
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '—';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}
const integer = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '—');
const kib = (value: number) => `${(value / 1024).toFixed(1)} KiB`;
const percent = (value: number) => (Number.isFinite(value) ? `${(value * 100).toFixed(value < 0.1 ? 2 : 1)}%` : '—');
/** A difference, signed: "+12.3" or "−4.56". */
const signed = (value: number) => (Number.isFinite(value) ? `${value < 0 ? '−' : '+'}${fixed(Math.abs(value))}` : '—');

const columns = new Map<string, Column>();
/** One Column object per label: rows keep their medians by Column, so the same label must give the same object. */
const col = (label: string, better: Better, get: Column['get'], format: Column['format'] = fixed): Column => {
  let column = columns.get(label);
  if (!column) columns.set(label, (column = { label, better, get, format }));
  return column;
};
const C = {
  ops: col('ops/s', 'high', (f) => f.opsPerSec, integer),
  p50: (what: string) => col(`${what} p50 ms`, 'low', (f) => f.latency.p50),
  p99: (what: string) => col(`${what} p99 ms`, 'low', (f) => f.latency.p99),
  max: (what: string) => col(`${what} max ms`, 'low', (f) => f.latency.max),
  waitP99: col('wait p99 ms', 'low', (f) => f.waitP99),
  handOffP50: col('hand-off p50 ms', 'low', (f) => f.handOffP50),
  handOffP99: col('hand-off p99 ms', 'low', (f) => f.handOffP99),
  overtaken: col('overtaken by a later caller', 'low', (f) => f.overtaken, percent),
  utilisation: col('utilisation', 'high', (f) => f.utilisation),
  utilisationToRelease: col('utilisation to release', 'high', (f) => f.utilisationToRelease),
  fairness: col('acquisitions per loop max/min', 'low', (f) => f.fairness),
  commands: col('Redis commands/acq', 'low', (f) => f.commandsPerAcq),
  scripts: col('script calls/acq', 'low', (f) => f.scriptCallsPerAcq),
  cpu: col('Redis CPU µs/acq', 'low', (f) => f.cpuUsPerAcq),
  clientCpu: col('client CPU µs/acq', 'low', (f) => f.clientCpuUsPerAcq),
  handOffCommands: col('hand-off phase commands/acq', 'low', (f) => f.handOffCommandsPerAcq),
  handOffCpu: col('hand-off phase Redis CPU µs/acq', 'low', (f) => f.handOffCpuUsPerAcq),
  connections: col('connections/client', 'low', (f) => f.connectionsPerClient),
  memory: col('heap per waiting acquirer', 'low', (f) => f.bytesPerWaiter, kib),
  overlaps: col('overlaps', 'none', (f) => f.overlaps, integer),
};

const COLUMNS: Record<ScenarioId, Column[]> = {
  uncontended: [C.ops, C.p50('round'), C.p99('round'), C.max('round'), C.commands, C.scripts, C.cpu, C.clientCpu, C.connections, C.overlaps],
  reentrant: [C.ops, C.p50('round'), C.p99('round'), C.max('round'), C.commands, C.scripts, C.cpu, C.clientCpu, C.overlaps],
  contended: [C.ops, C.p50('wait'), C.p99('wait'), C.max('wait'), C.utilisation, C.utilisationToRelease, C.fairness, C.overtaken, C.handOffP50, C.handOffP99, C.commands, C.scripts, C.cpu, C.clientCpu, C.connections, C.overlaps],
  herd: [C.ops, C.p50('hand-off'), C.p99('hand-off'), C.max('hand-off'), C.waitP99, C.commands, C.scripts, C.cpu, C.handOffCommands, C.handOffCpu, C.clientCpu, C.connections, C.overlaps],
  many: [C.ops, C.p50('hand-off'), C.p99('hand-off'), C.max('hand-off'), C.commands, C.cpu, C.clientCpu, C.connections, C.memory, C.overlaps],
};

/** The medians of one library in one scenario variant, and how many of its runs finished. */
interface Row {
  adapter: AdapterSpec;
  medians: Map<Column, number>;
  finished: number;
  runs: number;
  errors: string[];
}

function rows(input: ReportInput, scenario: ScenarioId, size: number | undefined): Row[] {
  const out: Row[] = [];
  for (const adapter of input.adapters) {
    const records = input.records.filter((r) => r.scenario === scenario && r.size === size && r.adapter === adapter.id && r.run > 0);
    if (records.length === 0) continue;
    const figures = records.flatMap((r) => (r.result.ok ? [r.result.figures] : []));
    const medians = new Map<Column, number>();
    for (const column of COLUMNS[scenario]) {
      const values = figures.map((f) => column.get(f)).filter((v): v is number => v !== undefined);
      if (values.length > 0) medians.set(column, median(values));
    }
    const errors = [...new Set(records.flatMap((r) => (r.result.ok ? [] : [r.result.error.split('\n')[0] ?? ''])))];
    out.push({ adapter, medians, finished: figures.length, runs: records.length, errors });
  }
  return out;
}

/** The best peer's median of a column (relock and the floors are compared with it, not to it). */
function best(all: Row[], column: Column): number | undefined {
  const values = all.filter((r) => r.adapter.kind === 'peer').map((r) => r.medians.get(column)).filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (values.length === 0 || column.better === 'none') return undefined;
  return column.better === 'high' ? Math.max(...values) : Math.min(...values);
}

function cell(row: Row, column: Column, reference: number | undefined): string {
  const value = row.medians.get(column);
  if (value === undefined) return row.finished === 0 ? '—' : '';
  const ratio = reference !== undefined && reference !== 0 && Number.isFinite(value) ? ` (${(value / reference).toFixed(2)}×)` : '';
  return `${column.format(value)}${ratio}`;
}

/** A library's name in the tables: relock and its variants in bold, floors in italics. */
function nameOf(adapter: AdapterSpec): string {
  switch (adapter.kind) {
    case 'relock':
      return `**${adapter.id}**`;
    case 'floor':
      return `*${adapter.id}*`;
    case 'baseline':
      return `${adapter.id} (relock before this change)`;
    case 'peer':
      return adapter.id;
  }
}

/** The reason a library gave for not running at all ("not available: ..."), if it did. */
function unavailable(row: Row): string | undefined {
  return row.finished === 0 && row.errors.length > 0 && row.errors.every((error) => error.startsWith('not available')) ? row.errors.join('; ') : undefined;
}

function label(row: Row): string {
  const name = nameOf(row.adapter);
  if (unavailable(row)) return `${name} ²`;
  return row.finished < row.runs ? `${name} ¹` : name;
}

function table(all: Row[], columns: Column[], references: (column: Column) => number | undefined, extra?: { label: string; value: (row: Row) => string }): string {
  const head = ['library', ...(extra ? [extra.label] : []), ...columns.map((c) => c.label)];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`];
  for (const row of all) {
    lines.push(`| ${[label(row), ...(extra ? [extra.value(row)] : []), ...columns.map((c) => cell(row, c, references(c)))].join(' | ')} |`);
  }
  return lines.join('\n');
}

function failures(all: Row[]): string {
  const notes = all
    .filter((row) => row.finished < row.runs)
    .map((row) => {
      const reason = unavailable(row);
      if (reason) return `² ${row.adapter.id}: ${reason}; no figures.`;
      return `¹ ${row.adapter.id}: ${row.runs - row.finished} of ${row.runs} runs did not finish (${row.errors.join('; ')}); ${row.finished > 0 ? `the figures are the median of the ${row.finished} that did` : 'no figures'}.`;
    });
  return notes.length > 0 ? `\n\n${notes.join('\n')}` : '';
}

function version(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(bench, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function rootVersion(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(bench, '..', 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: bench, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

/** relock's version and commit, for the record of a run. */
export function relockVersion(): string {
  const pkg = JSON.parse(readFileSync(join(bench, '..', 'package.json'), 'utf8')) as { version: string };
  const commit = git(['rev-parse', '--short', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--', '../src', '../lua']) !== '';
  return `${pkg.version} (dist/ built from ${commit || 'an unknown commit'}${dirty ? ' with uncommitted changes to src/ or lua/' : ''})`;
}

const yes = (ok: boolean) => (ok ? '**met**' : '**missed**');

interface Lookup {
  (scenario: ScenarioId, adapter: string, size?: number): Map<Column, number> | undefined;
}

function targets(input: ReportInput, at: Lookup): string {
  const lines = ['| target | relock | verdict |', '| --- | --- | --- |'];
  const peers = input.adapters.filter((a) => a.kind === 'peer');
  const relockUn = at('uncontended', 'relock');
  if (relockUn) {
    const ops = relockUn.get(C.ops) ?? Number.NaN;
    const floor = at('uncontended', 'floor-poll')?.get(C.ops);
    if (floor !== undefined) lines.push(`| 1. uncontended: ≥ 0.9× the SET NX floor (floor-poll) | ${integer(ops)} ops/s vs ${integer(floor)}: ${(ops / floor).toFixed(2)}× | ${yes(ops / floor >= 0.9)} |`);
    const fastest = peers.map((p) => ({ id: p.id, ops: at('uncontended', p.id)?.get(C.ops) })).filter((p): p is { id: string; ops: number } => p.ops !== undefined).sort((a, b) => b.ops - a.ops)[0];
    if (fastest) lines.push(`| 1. uncontended: level with the fastest peer (≥ 0.95×) | vs ${fastest.id} ${integer(fastest.ops)} ops/s: ${(ops / fastest.ops).toFixed(2)}× | ${yes(ops / fastest.ops >= 0.95)} |`);
    const scripts = relockUn.get(C.scripts);
    const commands = relockUn.get(C.commands);
    if (scripts !== undefined && commands !== undefined) lines.push(`| 1. uncontended: 2 round trips per acquire+release | ${fixed(scripts)} script calls and no other command from the client (${fixed(commands)} commands inside them) | ${yes(Math.abs(scripts - 2) < 0.01)} |`);
    const semaphore = at('uncontended', 'redis-semaphore')?.get(C.ops);
    if (semaphore !== undefined) {
      const before = at('uncontended', 'relock-0.1.0')?.get(C.ops);
      const then = before === undefined ? '' : `; relock before this change: ${(before / semaphore).toFixed(2)}×`;
      lines.push(`| 1. uncontended (issue 8): ≥ 0.85× redis-semaphore in the same run | ${integer(ops)} ops/s vs ${integer(semaphore)}: ${(ops / semaphore).toFixed(2)}×${then} | ${yes(ops / semaphore >= 0.85)} |`);
    }
  }
  const relockC = at('contended', 'relock');
  if (relockC) {
    const utilisation = relockC.get(C.utilisation) ?? Number.NaN;
    const toRelease = relockC.get(C.utilisationToRelease) ?? Number.NaN;
    const bestPeer = peers.map((p) => ({ id: p.id, util: at('contended', p.id)?.get(C.utilisation), toRelease: at('contended', p.id)?.get(C.utilisationToRelease) })).filter((p): p is { id: string; util: number; toRelease: number } => p.util !== undefined).sort((a, b) => b.util - a.util)[0];
    const verdict = utilisation >= 0.8 ? yes(true) : toRelease >= 0.8 ? '**met** only counting the release round trip as held' : yes(false);
    lines.push(`| 3. contended: utilisation ≥ 0.8 | ${fixed(utilisation)} (${fixed(toRelease)} to release)${bestPeer ? `; best peer ${bestPeer.id}: ${fixed(bestPeer.util)} (${fixed(bestPeer.toRelease)})` : ''} | ${verdict} |`);
    const p99 = relockC.get(C.p99('wait'));
    const bestP99 = peers.map((p) => ({ id: p.id, p99: at('contended', p.id)?.get(C.p99('wait')) })).filter((p): p is { id: string; p99: number } => p.p99 !== undefined).sort((a, b) => a.p99 - b.p99)[0];
    if (p99 !== undefined && bestP99) lines.push(`| 3. contended: p99 wait no worse than the best peer's | ${fixed(p99)} ms vs ${bestP99.id} ${fixed(bestP99.p99)} ms | ${yes(p99 <= bestP99.p99)} |`);
  }
  const herdSizes = input.sizes.herd.filter((size) => at('herd', 'relock', size));
  if (herdSizes.length > 0) {
    const cpu = herdSizes.map((size) => at('herd', 'relock', size)?.get(C.cpu) ?? Number.NaN);
    const spread = Math.max(...cpu) / Math.min(...cpu);
    lines.push(`| 4. herd: Redis CPU/acq flat (max/min ≤ 1.5) over ${herdSizes.join(', ')} waiters | ${cpu.map(fixed).join(', ')} µs: ${spread.toFixed(2)}× | ${yes(spread <= 1.5)} |`);
    if (herdSizes.includes(200)) {
      const mine = at('herd', 'relock', 200)?.get(C.cpu) ?? Number.NaN;
      const polling = peers.filter((p) => p.waiting === 'polling').map((p) => ({ id: p.id, cpu: at('herd', p.id, 200)?.get(C.cpu) })).filter((p): p is { id: string; cpu: number } => p.cpu !== undefined).sort((a, b) => a.cpu - b.cpu);
      const lowest = polling[0];
      if (lowest) lines.push(`| 4. herd: Redis CPU/acq at 200 waiters below every polling peer's | ${fixed(mine)} µs vs lowest polling peer ${lowest.id} ${fixed(lowest.cpu)} µs | ${yes(mine < lowest.cpu)} |`);
    }
    const commands = herdSizes.map((size) => at('herd', 'relock', size)?.get(C.commands) ?? Number.NaN);
    lines.push(`| 4. herd: ≤ 20 Redis commands/acq (scripts' inner commands included) | ${commands.map(fixed).join(', ')} at ${herdSizes.join(', ')} waiters | ${yes(Math.max(...commands) <= 20)} |`);
  }
  const relockMany = at('many', 'relock', input.sizes.names);
  if (relockMany) {
    const connections = relockMany.get(C.connections) ?? Number.NaN;
    lines.push(`| 5. many locks: 2 connections per client | ${fixed(connections)} | ${yes(connections === 2)} |`);
    const memory = relockMany.get(C.memory);
    if (memory !== undefined) lines.push(`| 5. many locks: heap per waiting acquirer reported | ${kib(memory)} | reported |`);
  }
  return lines.join('\n');
}

function topOf(input: ReportInput, scenario: ScenarioId, adapter: string, size: number | undefined): Map<string, number> {
  const record = input.records.find((r) => r.scenario === scenario && r.size === size && r.adapter === adapter && r.run > 0 && r.result.ok);
  return new Map(record?.result.ok ? record.result.figures.topCommands : []);
}

/** For each missed target, what this run's own figures say about where the time or the load goes. */
function why(input: ReportInput, at: Lookup): string {
  const notes: string[] = [];
  const un = at('uncontended', 'relock');
  const floor = at('uncontended', 'floor-poll');
  if (un && floor && (un.get(C.ops) ?? 0) < 0.9 * (floor.get(C.ops) ?? 0)) {
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
  if (contended && ((contended.get(C.utilisation) ?? 0) < 0.8 || mine)) {
    const others = input.adapters.filter((a) => a.kind === 'peer' || a.kind === 'floor').map((a) => ({ id: a.id, legs: legsOf(input, a.id) })).filter((o): o is { id: string; legs: HandOffLegs } => o.legs !== undefined);
    const fastest = others.sort((a, b) => a.legs.total - b.legs.total)[0];
    const hold = 1 / (contended.get(C.ops)! / 1000) * contended.get(C.utilisation)!;
    let text =
      `**Contended.** Utilisation is ${fixed(contended.get(C.utilisation)!)}: with holds of about ${hold.toFixed(2)} ms, every hand-off that takes ${fixed(contended.get(C.handOffP50)!)} ms (the median) is lock time lost. ` +
      `Reaching 0.8 would need hand-offs of about ${(hold / 4).toFixed(2)} ms.`;
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
        ` Even the floor, which sends nothing but one SET NX per woken waiter, does not get to 0.8 this way: "publish, then the woken waiter tries" costs a message and a round trip after every release.`;
    }
    notes.push(text);
  }
  const herdSizes = input.sizes.herd.filter((size) => at('herd', 'relock', size));
  const worst = herdSizes.map((size) => ({ size, commands: at('herd', 'relock', size)!.get(C.commands)! })).sort((a, b) => b.commands - a.commands)[0];
  if (worst && worst.commands > 20) {
    const top = topOf(input, 'herd', 'relock', worst.size);
    const evalsha = top.get('evalsha') ?? Number.NaN;
    notes.push(
      `**Herd, commands.** At ${worst.size} waiters relock makes ${fixed(evalsha)} script calls per acquisition: one winning acquire, one release and about ${fixed(evalsha - 2)} losing attempts. ` +
        `Each release is published to every process, and each wakes its queue's head; all but one lose, each loss costing the EVALSHA and the two reads inside it (${Array.from(top.entries()).filter(([name]) => name === 'pttl' || name === 'hget').map(([name, calls]) => `${name} ${calls.toFixed(2)}`).join(', ')} per acquisition). ` +
        `That count depends on the number of processes, not of waiters, which is why the load stays flat; it is also the whole margin over 20.`,
    );
  }
  return notes.length === 0 ? '' : `### Why, where a target is missed\n\nFrom this run's own figures.\n\n${notes.join('\n\n')}`;
}

/** How the load of the polling libraries grows with the waiters, beside relock's. */
function herdGrowth(input: ReportInput, at: Lookup): string {
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

function topCommands(input: ReportInput, scenario: ScenarioId, size: number | undefined): string {
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
function legsTable(input: ReportInput): string {
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

const value = (figures: Map<Column, number>, column: Column) => figures.get(column) ?? Number.NaN;

/**
 * Scenario 1, before and after (issue 8, "where each microsecond went"): relock against relock
 * before this change, both beside relock's own scripts without the library around them.
 */
function beforeAfter(input: ReportInput, at: Lookup): string {
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
function diagnosticsCost(at: Lookup): string {
  const plain = at('uncontended', 'relock');
  const traced = at('uncontended', 'relock+diagnostics');
  if (!plain || !traced) return '';
  return (
    `**Diagnostics.** With a no-op subscriber on each of relock's five diagnostics channels (*relock+diagnostics*), relock does ${integer(value(traced, C.ops))} rounds/s, ${fixed(value(traced, C.ops) / value(plain, C.ops))}× relock without subscribers in the same slices, ` +
    `and spends ${fixed(value(traced, C.clientCpu))} µs of client CPU per round against ${fixed(value(plain, C.clientCpu))} (${signed(value(traced, C.clientCpu) - value(plain, C.clientCpu))} µs); Redis sees ${fixed(value(traced, C.commands))} commands per round against ${fixed(value(plain, C.commands))}. ` +
    `That is what turning diagnostics on costs, give or take the noise of this shared machine. Without subscribers relock only reads \`hasSubscribers\` before each publication: \`node --import tsx bench/diagnostics-cost.ts\` times that guard alone, a publication to a subscriber, and acquire+release with and without subscribers on a private Redis, in nanoseconds.`
  );
}

/** The reason relock-fair gave for not running, or undefined. */
function fairUnavailable(input: ReportInput): string | undefined {
  const record = input.records.find((r) => r.adapter === 'relock-fair' && !r.result.ok && r.result.error.startsWith('not available'));
  return record && !record.result.ok ? record.result.error : undefined;
}

/**
 * Issue 9's targets, as ratios in this run: the fair lock against the best peer and the pub/sub
 * floor, and the default lock() against that floor; rows only for the scenarios that ran. "missed"
 * where a figure misses or relock-fair has none.
 */
function fairTargets(input: ReportInput, at: Lookup): string {
  const contended = input.scenarios.includes('contended');
  const herd = input.scenarios.includes('herd');
  if (!contended && !herd) return '';
  const lines = ['| target | measured | verdict |', '| --- | --- | --- |'];
  const row = (target: string, measured: string, verdict: string) => lines.push(`| ${target} | ${measured} | ${verdict} |`);
  const ran = input.adapters.some((a) => a.id === 'relock-fair');
  const refused = fairUnavailable(input);
  const absent = (scenario: string): [string, string] =>
    !ran ? ['—', 'not measured: relock-fair was not in this run'] : refused ? ['—', '**missed**: not available (below)'] : ['—', `**missed**: relock-fair has no figures in ${scenario}`];
  const load = (where: string) => `${where}: ≤ 22 Redis commands and ≤ 3 script calls per acquisition`;

  if (contended) {
    const fair = at('contended', 'relock-fair');
    const floor = at('contended', 'floor-pubsub');
    const noFloor: [string, string] = ['—', 'not measured: floor-pubsub was not in this run'];
    const bestPeer = input.adapters
      .filter((a) => a.kind === 'peer')
      .map((a) => ({ id: a.id, p99: at('contended', a.id)?.get(C.p99('wait')) }))
      .filter((p): p is { id: string; p99: number } => p.p99 !== undefined && Number.isFinite(p.p99))
      .sort((a, b) => a.p99 - b.p99)[0];
    const fairRows: [string, (fair: Map<Column, number>) => [string, string]][] = [
      [
        "3. fair: p99 wait ≤ 0.4× the best peer's",
        (f) => {
          if (!bestPeer) return ['—', 'not measured: no peer in this run'];
          const ratio = value(f, C.p99('wait')) / bestPeer.p99;
          return [`${fixed(value(f, C.p99('wait')))} ms vs ${bestPeer.id} ${fixed(bestPeer.p99)} ms: ${ratio.toFixed(3)}×`, yes(ratio <= 0.4)];
        },
      ],
      [
        "3. fair: p99 wait ≤ 0.5× floor-pubsub's",
        (f) => {
          if (!floor) return noFloor;
          const ratio = value(f, C.p99('wait')) / value(floor, C.p99('wait'));
          return [`${fixed(value(f, C.p99('wait')))} ms vs ${fixed(value(floor, C.p99('wait')))} ms: ${ratio.toFixed(3)}×`, yes(ratio <= 0.5)];
        },
      ],
      [
        "3. fair: utilisation ≥ 0.95× floor-pubsub's",
        (f) => {
          if (!floor) return noFloor;
          const ratio = value(f, C.utilisation) / value(floor, C.utilisation);
          return [`${fixed(value(f, C.utilisation))} vs ${fixed(value(floor, C.utilisation))}: ${ratio.toFixed(3)}×`, yes(ratio >= 0.95)];
        },
      ],
      [
        '3. fair: overtaken by a later caller ≤ 0.5 %',
        (f) => {
          const share = value(f, C.overtaken);
          const others = ['relock', 'floor-pubsub'].map((id) => ({ id, share: at('contended', id)?.get(C.overtaken) })).filter((o): o is { id: string; share: number } => o.share !== undefined);
          return [`${percent(share)}${others.length > 0 ? ` (${others.map((o) => `${o.id} ${percent(o.share)}`).join(', ')})` : ''}`, yes(share <= 0.005)];
        },
      ],
      [
        load('3. fair'),
        (f) => {
          const commands = value(f, C.commands);
          const scripts = value(f, C.scripts);
          return [`${fixed(commands)} commands, ${fixed(scripts)} script calls`, yes(commands <= 22 && scripts <= 3)];
        },
      ],
    ];
    for (const [target, measure] of fairRows) row(target, ...(fair ? measure(fair) : absent('scenario 3')));
  }

  if (herd) {
    const sizes = input.sizes.herd.filter((size) => at('herd', 'relock-fair', size));
    const flat = '4. herd, fair: Redis CPU/acq flat from 50 to 800 waiters (max/min ≤ 1.5)';
    if (sizes.length === 0) {
      row(load('4. herd, fair, at every size'), ...absent('scenario 4'));
      row(flat, ...absent('scenario 4'));
    } else {
      const figures = sizes.map((size) => at('herd', 'relock-fair', size)!);
      const commands = figures.map((f) => value(f, C.commands));
      const scripts = figures.map((f) => value(f, C.scripts));
      row(
        load('4. herd, fair, at every size'),
        `${commands.map(fixed).join(', ')} commands and ${scripts.map(fixed).join(', ')} script calls at ${sizes.join(', ')} waiters`,
        yes(Math.max(...commands) <= 22 && Math.max(...scripts) <= 3),
      );
      const cpu = figures.map((f) => value(f, C.cpu));
      const spread = Math.max(...cpu) / Math.min(...cpu);
      const missing = [50, 800].filter((size) => !sizes.includes(size));
      row(
        flat,
        `${cpu.map(fixed).join(', ')} µs at ${sizes.join(', ')} waiters: ${spread.toFixed(2)}×${missing.length > 0 ? ` (${missing.join(' and ')} not run)` : ''}`,
        missing.length > 0 ? `${yes(spread <= 1.5)} over the sizes run` : yes(spread <= 1.5),
      );
    }
  }

  if (contended) {
    const lock = at('contended', 'relock');
    const floor = at('contended', 'floor-pubsub');
    const utilTarget = "3. lock(): utilisation ≥ 0.95× floor-pubsub's";
    const p99Target = "3. lock(): p99 wait no worse than floor-pubsub's";
    if (!lock || !floor) {
      const why: [string, string] = ['—', !lock ? 'not measured: relock has no figures in scenario 3' : 'not measured: floor-pubsub was not in this run'];
      row(utilTarget, ...why);
      row(p99Target, ...why);
    } else {
      const ratio = value(lock, C.utilisation) / value(floor, C.utilisation);
      row(utilTarget, `${fixed(value(lock, C.utilisation))} vs ${fixed(value(floor, C.utilisation))}: ${ratio.toFixed(3)}×`, yes(ratio >= 0.95));
      const p99 = value(lock, C.p99('wait'));
      const floorP99 = value(floor, C.p99('wait'));
      row(p99Target, `${fixed(p99)} ms vs ${fixed(floorP99)} ms: ${(p99 / floorP99).toFixed(3)}×`, yes(p99 <= floorP99));
    }
  }
  const note = refused ? `\n\nNot available: relock-fair has no figures (${refused.replace(/^not available: /, '')}).` : '';
  return `### Fair lock and hand-off (issue 9)\n\nRatios within this run; the fair lock is *relock-fair* (\`client.fairLock(name)\`), \`lock()\` is **relock**.\n\n${lines.join('\n')}${note}`;
}

/** floor-poll runs twice in scenario 1, as two libraries: how far apart they land is the noise. */
function noise(input: ReportInput, all: Row[]): string {
  const first = all.find((row) => row.adapter.id === 'floor-poll')?.medians.get(C.ops);
  const again = input.records.filter((r) => r.scenario === 'uncontended' && r.adapter === 'floor-poll#2' && r.run > 0 && r.result.ok);
  if (first === undefined || again.length === 0) return '';
  const second = median(again.map((r) => (r.result.ok ? r.result.figures.opsPerSec : Number.NaN)));
  const spread = (Math.max(first, second) / Math.min(first, second) - 1) * 100;
  return `How much to trust a ratio here: *floor-poll* also ran a second time in every repetition, interleaved like another library; its two medians, ${integer(first)} and ${integer(second)} rounds/s, differ by ${spread.toFixed(0)}%. Differences of that order between libraries are the noise of this shared machine, not the libraries.`;
}

function chartData(all: Row[], figures: { column: Column; name: string }[], waiters?: number): Datum[] {
  return all.flatMap((row) =>
    figures.flatMap(({ column, name }) => {
      const value = row.medians.get(column);
      return value === undefined ? [] : [{ library: row.adapter.id, kind: row.adapter.kind, figure: name, value, ...(waiters !== undefined ? { waiters } : {}) }];
    }),
  );
}

export async function writeReport(input: ReportInput): Promise<string[]> {
  const chartsDir = join(input.target, 'benchmarks');
  mkdirSync(chartsDir, { recursive: true });
  const written: string[] = [];
  const order = input.adapters.map((a) => a.id);
  const cache = new Map<string, Row[]>();
  const rowsOf = (scenario: ScenarioId, size: number | undefined) => {
    const key = `${scenario}:${size}`;
    if (!cache.has(key)) cache.set(key, rows(input, scenario, size));
    return cache.get(key)!;
  };
  const at: Lookup = (scenario, adapter, size) => rowsOf(scenario, size).find((r) => r.adapter.id === adapter && r.finished > 0)?.medians;

  const sections: string[] = [];
  const chart = async (name: string, svg: Promise<string>) => {
    const file = join(chartsDir, `${name}.svg`);
    writeFileSync(file, await svg);
    written.push(file);
    return `![${name}](benchmarks/${name}.svg)`;
  };
  for (const scenario of input.scenarios) {
    const parts: string[] = [`## ${TITLES[scenario]}`];
    const columns = COLUMNS[scenario];
    if (scenario === 'herd') {
      const data: Datum[] = [];
      const tables: string[] = [];
      for (const size of input.sizes.herd) {
        const all = rowsOf('herd', size);
        if (all.length === 0) continue;
        data.push(...chartData(all, [{ column: C.cpu, name: 'cpu' }, { column: C.commands, name: 'commands' }, { column: C.ops, name: 'ops' }], size));
        tables.push(`### ${size} waiters\n\n${table(all, columns, (c) => best(all, c))}${failures(all)}${topCommands(input, 'herd', size)}`);
      }
      parts.push(DESCRIPTIONS.herd(input.sizes));
      parts.push(await chart('herd', growth('The herd: load on Redis and hand-off rate by waiters', data, [
        { name: 'cpu', title: 'Redis CPU µs per acquisition' },
        { name: 'commands', title: 'Redis commands per acquisition' },
        { name: 'ops', title: 'acquisitions per second' },
      ], order)));
      parts.push(`How the load per acquisition grows with the waiters (medians):\n\n${herdGrowth(input, at)}`);
      parts.push(...tables);
    } else {
      const size = scenario === 'many' ? input.sizes.names : undefined;
      const all = rowsOf(scenario, size);
      if (all.length === 0) continue;
      parts.push(DESCRIPTIONS[scenario](input.sizes));
      if (scenario === 'reentrant') {
        // No peer re-enters: the reference is relock's own plain acquire+release of scenario 1.
        const plain = at('uncontended', 'relock');
        const data = [...chartData(all, [{ column: C.ops, name: 'ops' }, { column: C.p99('round'), name: 'p99' }])].map((d) => ({ ...d, library: 'relock, nested' }));
        if (plain) data.push({ library: 'relock, plain (scenario 1)', kind: 'peer', figure: 'ops', value: plain.get(C.ops) ?? Number.NaN }, { library: 'relock, plain (scenario 1)', kind: 'peer', figure: 'p99', value: plain.get(C.p99('round')) ?? Number.NaN });
        parts.push(await chart('reentrant', bars('Reentrant: a nested acquire+release inside a held lock', data, [{ name: 'ops', title: 'rounds per second' }, { name: 'p99', title: 'p99 ms per round' }], ['relock, nested', 'relock, plain (scenario 1)'], { legend: false })));
        parts.push(`Ratios are to relock's own plain acquire+release (scenario 1), since no peer can re-enter.\n\n${table(all, columns, (c) => (plain ? plain.get(c) : undefined))}`);
      } else {
        const figures: Record<string, { column: Column; name: string; title: string }[]> = {
          uncontended: [
            { column: C.ops, name: 'ops', title: 'acquire+release per second' },
            { column: C.p99('round'), name: 'p99', title: 'p99 ms per round' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
          contended: [
            { column: C.utilisation, name: 'utilisation', title: 'utilisation (held / wall)' },
            { column: C.p99('wait'), name: 'p99', title: 'p99 wait ms' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
          many: [
            { column: C.ops, name: 'ops', title: 'acquisitions per second' },
            { column: C.memory, name: 'memory', title: 'heap bytes per waiting acquirer' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
        };
        const chosen = figures[scenario]!;
        parts.push(await chart(scenario, bars(TITLES[scenario].replace(/^\d\. /, ''), chartData(all, chosen), chosen, order)));
        parts.push(`${table(all, columns, (c) => best(all, c))}${failures(all)}${topCommands(input, scenario, size)}`);
        if (scenario === 'uncontended') parts.push(...[beforeAfter(input, at), diagnosticsCost(at), noise(input, all)].filter((text) => text !== ''));
        if (scenario === 'contended') parts.push(legsTable(input));
      }
    }
    sections.push(parts.join('\n\n'));
  }

  const minutes = `${Math.floor(input.seconds / 60)} min ${Math.round(input.seconds % 60)} s`;
  const cpu = cpus();
  const peers = input.adapters.map((a) => {
    const v =
      a.kind === 'relock'
        ? input.relock
        : a.kind === 'baseline'
          ? `0.1.0 (built from ${input.baseline?.slice(0, 7) ?? BASELINE_COMMIT} by bench/lib/baseline.ts)`
          : a.pkg
            ? version(a.pkg)
            : 'written in bench/adapters';
    const name = a.kind === 'peer' ? `[${a.id}](https://www.npmjs.com/package/${a.pkg})` : a.kind === 'floor' ? `*${a.id}* (floor)` : nameOf(a);
    return `| ${name} | ${v} | ${a.waiting} | ${a.settings} |`;
  });
  const doc = `# Benchmarks

<!-- Generated by bench/run.ts (\`${input.command}\`): do not edit by hand, run it again. -->

relock against the Redis lock libraries people would pick instead, on the same private Redis in the
same run. Generated by \`${input.command}\` on ${input.date}; the run took ${minutes}.
Each figure is the median of ${input.sizes.runs} runs; in brackets, its ratio to the best **peer**
for that figure (the highest for ops/s and utilisation, the lowest for everything else), since the
machine is shared and absolute times drift from run to run. The floors (*in italics*) are not peers:
they are what a minimal hand-written lock costs.

## Targets

${targets(input, at)}

${fairTargets(input, at)}

${why(input, at)}

## The machine

- ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()} ${release()}; shared with other
  work (load average ${input.loadAtStart.map((l) => l.toFixed(2)).join(' / ')} at the start of the run, ${input.loadAtEnd.map((l) => l.toFixed(2)).join(' / ')} at the end).
- Node ${process.version}; Redis ${input.redis.version} (${process.env.REDIS_URL ? 'at REDIS_URL' : 'a private redis-server on 127.0.0.1, no persistence'}, io-threads ${input.redis.ioThreads}),
  on the same cores as the clients.
- relock runs from its published bundle, \`dist/index.mjs\`, which \`npm run bench\` builds first from the
  tree it sits in (the root script is \`npm run build && cd bench && npm ci && node --import tsx run.ts\`)
  and copies to \`bench/results/relock-dist/\` for the run, so a rebuild meanwhile cannot disturb it;
  the peers live in \`bench/package.json\` only. The harness and the floors are TypeScript run by tsx;
  *relock-scripts* imports relock's \`src/lock/commands.ts\`, \`src/lock/keys.ts\` and \`src/runtime/script.ts\` directly.
- *relock-0.1.0*, relock before this change, is built by the bench itself (\`bench/lib/baseline.ts\`):
  \`git archive ${input.baseline?.slice(0, 7) ?? BASELINE_COMMIT}\` of \`src\`, \`lua\`, \`scripts\` and the build files into
  \`bench/results/baseline-src/\`, its Lua generated and bundled there with the root's \`node_modules\`, and
  its \`dist/index.mjs\` copied to \`bench/results/baseline/\` (once per commit); it then runs through the
  same adapter as relock, on the same copy of ioredis. Without git or that commit it is left out.

## Libraries, versions and settings

Every library holds its locks for 30 s and waits until it has the lock; the polling ones poll every
10 ms (their fastest sensible setting: the same as the floor; lower only multiplies their load on
Redis).

| library | version | waits by | settings |
| --- | --- | --- | --- |
${peers.join('\n')}

redlock-universal declares \`engines: { node: ">=22" }\` in every published version; none allows
Node 20. It installs (npm only warns) and ${input.records.some((r) => r.adapter === 'redlock-universal' && !r.result.ok) ? 'ran on Node 20, though not every run finished (see the tables)' : 'finished every run of this one on Node 20 with no overlap'}, so it is measured
rather than left out: read its figures knowing it is outside its declared engines.
Redis clients: ioredis ${version('ioredis')} (bench's own copy) for relock, the peers and the floors (relock's root declares ${rootVersion('ioredis')}); node-redis ${version('redis')} for simple-redis-mutex.

### What the libraries do (read in their source)

- **node-redisson** keeps Redisson's design: a hash per lock with an owner field and a count, a
  watchdog, a release that publishes. But a waiter subscribes to the lock's channel only after its
  attempt failed, and unsubscribes (for its whole process: the subscription is not counted per
  waiter) as soon as a message arrives. A release that lands before the waiter's SUBSCRIBE is
  missed, and the waiter sleeps for the holder's remaining TTL, up to the 30 s lease. With a 1 ms
  critical section (scenario 3) the SUBSCRIBE usually wins the race; with none (scenarios 4 and 5)
  every hand-off inside a process can cost up to 30 s. Its unlock makes two round trips (the
  script, then a DEL of an "unlock latch" key).
- **simple-redis-mutex** publishes every release on one global channel; every waiter of that lock
  in each process then sends SET NX, so its load per acquisition grows with the waiters per
  process. Each acquisition also INCRs a global fencing counter.
- **@sesamecare-oss/redlock** and **redlock** 4 poll with a Lua script (EXISTS then SET); the
  former starts every script with a \`SELECT\`, counted among its commands, and emits \`'error'\`
  for every attempt that finds the lock taken.
- **redis-semaphore** and **redlock-universal** poll with a plain \`SET NX PX\` and release with a
  Lua compare-and-delete: the same commands as *floor-poll*.

## How it is measured

- One interface for all (\`bench/adapters/\`): \`acquire(name)\` resolves once the lock is held,
  \`release()\` gives it back. Every client runs in a worker process of its own (\`bench/lib/worker.ts\`),
  forked fresh for each run; it connects and warms up (one acquire+release on a name of its own;
  200 in scenarios 1 and 2) before the measured part starts. The harness itself: \`bench/run.ts\`
  (the plan, the progress lines), \`bench/lib/runner.ts\` (one run: workers, Redis counters, figures),
  \`bench/lib/report.ts\` and \`bench/lib/charts.ts\` (this page).
- **Overlap check**: every critical section is stamped on the system-wide monotonic clock
  (\`process.hrtime\`, the same in every process) just after \`acquire\` resolves and just before
  \`release\` is called; the sections of one lock, from all processes, must never overlap. Each
  stamp lies strictly inside the time Redis held the lock, so any overlap is a real double grant.
- **Latency**: scenarios 1 and 2, one acquire+release round; 3, the wait from calling \`acquire\`
  to holding the lock; 4 and 5, the hand-off: from one holder leaving its critical section to the next
  one entering it. **Wait p99** is from calling \`acquire\` to holding.
- **Utilisation** (3): time inside critical sections / wall time, over the window from 250 ms after
  the start to the end (${input.sizes.contendedMs / 1000} s). The lock is in fact held on Redis a little longer than the
  critical section: from the acquire's script to the release's, that is until the release reaches
  Redis. **Utilisation to release** counts each hold until its \`release()\` resolved (overlapping
  spans merged). The first leaves out about a round trip per hold (the acquire's reply, the release's
  request), the second adds the release's reply and leaves out the acquire's. **Fairness**:
  acquisitions of the busiest loop / of the idlest loop.
- **Overtaken by a later caller** (3): each acquire is stamped when it is called and when it
  resolves, on the same system-wide clock in every process; an acquisition counts as overtaken when
  some other acquire of the lock, called at least 1 ms after it (in any process), got the lock
  before it did. A FIFO lock scores 0; a lock that lets every waiter race scores what luck gives.
- **Hand-off p50/p99** (3): from one holder leaving its critical section (just before it calls
  \`release()\`) to the next holder entering, counted only where that next holder had already called
  \`acquire()\` before the previous one left (so idle time between holders is not hand-off).
  In 4 and 5 the hand-off latency counts every gap between holders.
- **Redis commands per acquisition**: \`CONFIG RESETSTAT\` once every client is connected and warm,
  then the sum of \`calls\` over \`INFO commandstats\` at the end, less the harness's own INFO/CONFIG.
  Commands that scripts call are counted by Redis as commands of their own (\`cmdstat_hset\`...), so
  they are included; **script calls/acq** counts the EVALSHA/EVAL calls alone (round trips, for
  libraries that send nothing else). **Redis CPU** is the \`used_cpu_user + used_cpu_sys\` delta
  of \`INFO cpu\` over the same window; it includes Redis's network work, so it is what a lock costs
  the server, not only its scripts.
- **Connections per client**: \`total_connections_received\` from before the workers start to the
  end, divided by the number of clients (one per process).
- **Heap per waiting acquirer** (5): \`heapUsed\` after two forced GCs with the ${input.sizes.names} holders in place,
  and again with the ${input.sizes.names * 2} waiters queued for ${MANY_SETTLE_MS} ms, divided by the waiters.
- **Client CPU per acquisition**: \`process.cpuUsage()\` of the client processes over the measured
  part (all their threads: the library, ioredis, V8's compiler and GC), divided by the acquisitions.

${sections.join('\n\n')}

## Sizing

${SIZING(input.sizes, minutes)}

## Reproduce

\`\`\`sh
npm ci && npm run bench                       # the whole run: writes this file and docs/benchmarks/*.svg
npm run bench -- --quick                      # 1 run, smaller sizes, report under bench/results/docs
npm run bench -- --only relock,floor-poll --scenarios herd --runs 1
REDIS_URL=redis://127.0.0.1:6380 npm run bench   # on a Redis of your own: it runs CONFIG RESETSTAT and
                                              # deletes keys matching *relock-bench:* (never FLUSHALL)
BENCH_DEBUG=1 npm run bench -- --quick        # where each run's time goes (fork, run, close)
cd bench && node --import tsx run.ts --report-only   # this page again from bench/results/results.json
node --import tsx bench/diagnostics-cost.ts   # the diagnostics guards and acquire+release with and without subscribers
\`\`\`

Raw figures of the last run, every repetition: \`bench/results/results.json\`; what the workers
printed: \`bench/results/workers.log\`.
`;
  const file = join(input.target, 'benchmarks.md');
  writeFileSync(file, doc);
  written.unshift(file);
  return written;
}

const DESCRIPTIONS: Record<ScenarioId, (sizes: Sizes) => string> = {
  uncontended: (s) => `One client, one caller: acquire then release one lock, ${s.rounds.toLocaleString('en-US')} times in a row (after 200 to warm up). A round is one acquire+release.`,
  reentrant: (s) => `relock only: inside a held lock's async context (\`lease.run\`), ${s.rounds.toLocaleString('en-US')} nested acquire+release rounds of the same lock. The others cannot re-enter: a nested acquire would wait for itself.`,
  contended: (s) => `4 processes, each with 2 loops, on one lock for ${s.contendedMs / 1000} s: acquire, hold 1 ms (a timer), release, think 5 ms (a timer). Eight loops each wanting the lock 1 ms in every 6 ms keep it always wanted: the time it is not held is hand-off.`,
  herd: (s) => `One lock, held by one process while ${s.herd.join(', ')} waiters (a quarter in each of 4 processes) start acquiring it; ${HERD_SETTLE_MS} ms later it is released, and every waiter takes it once and releases it at once, in turn. The load is counted from the start of the waiters (so a waiter's first attempt and its subscribing count) to the last release; the "hand-off phase" columns count from the holder's release only.`,
  many: (s) => `One process, one client: ${s.names.toLocaleString('en-US')} lock names, each held, each with 2 waiters queued behind it (${(s.names * 2).toLocaleString('en-US')} waiting acquirers); then every holder releases and each waiter takes its lock once and releases it. Ops/s is waiters served per second from the release.`,
};

function SIZING(sizes: Sizes, minutes: string): string {
  return `The whole run took ${minutes} on the machine above (aim: under 20 minutes on 2 shared cores).
Each scenario runs ${sizes.runs} times per library, and the report gives the median of each figure. Within a
repetition the libraries take turns, so that drift on the shared machine spreads over all of them;
scenario 1, the one whose targets are ratios of throughput, goes further: all the libraries' workers
are started together and run their ${sizes.rounds.toLocaleString('en-US')} rounds in ${SLICES} slices of ${Math.floor(sizes.rounds / SLICES)}, turn by turn, so a burst of load
from elsewhere lands on every library alike (*floor-poll*, measured twice in that interleave, shows
how much noise is left). Per run: ${sizes.rounds.toLocaleString('en-US')} rounds in scenarios 1 and 2 (2-4 s for the slowest
library); ${sizes.contendedMs / 1000} s of contention in 3 (about 1,200-1,800 acquisitions), plus one traced run per pub/sub
library on ioredis; ${sizes.herd.join(', ')} waiters in 4 (800 is where the polling costs show); ${sizes.names.toLocaleString('en-US')} names in 5.
Most of a run's time is starting its workers (about 1 s for 4 processes under tsx). A herd or
many-locks run that does not finish within ${LONG_RUN_TIMEOUT_MS / 1000} s is stopped (its workers killed) and reported with
how far it got; that library is then not run again in that scenario, nor with more waiters.`;
}
