// The report's figures: one column per figure (how it is read from a run, which way is better, how
// it is printed), a library's medians per scenario (a row), and the tables made of them.
import type { AdapterSpec } from '../adapters/types.ts';
import type { Datum } from './charts.ts';
import type { ScenarioId } from './protocol.ts';
import type { ReportInput } from './report-input.ts';
import type { CaseFigures } from './runner.ts';
import { median } from './stats.ts';

export type Better = 'high' | 'low' | 'none';
export interface Column {
  label: string;
  better: Better;
  get(figures: CaseFigures): number | undefined;
  format(value: number): string;
}

export function fixed(value: number): string {
  if (!Number.isFinite(value)) return value > 0 ? '∞' : '—';
  const abs = Math.abs(value);
  if (abs >= 1000) return Math.round(value).toLocaleString('en-US');
  if (abs >= 100) return value.toFixed(0);
  if (abs >= 10) return value.toFixed(1);
  if (abs >= 1) return value.toFixed(2);
  return value.toFixed(3);
}
export const integer = (value: number) => (Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '—');
export const kib = (value: number) => `${(value / 1024).toFixed(1)} KiB`;
export const percent = (value: number) => (Number.isFinite(value) ? `${(value * 100).toFixed(value < 0.1 ? 2 : 1)}%` : '—');
/** A difference, signed: "+12.3" or "−4.56". */
export const signed = (value: number) => (Number.isFinite(value) ? `${value < 0 ? '−' : '+'}${fixed(Math.abs(value))}` : '—');

const columns = new Map<string, Column>();
/** One Column object per label: rows keep their medians by Column, so the same label must give the same object. */
const col = (label: string, better: Better, get: Column['get'], format: Column['format'] = fixed): Column => {
  let column = columns.get(label);
  if (!column) columns.set(label, (column = { label, better, get, format }));
  return column;
};
export const C = {
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

export const COLUMNS: Record<ScenarioId, Column[]> = {
  uncontended: [C.ops, C.p50('round'), C.p99('round'), C.max('round'), C.commands, C.scripts, C.cpu, C.clientCpu, C.connections, C.overlaps],
  reentrant: [C.ops, C.p50('round'), C.p99('round'), C.max('round'), C.commands, C.scripts, C.cpu, C.clientCpu, C.overlaps],
  contended: [C.ops, C.p50('wait'), C.p99('wait'), C.max('wait'), C.utilisation, C.utilisationToRelease, C.fairness, C.overtaken, C.handOffP50, C.handOffP99, C.commands, C.scripts, C.cpu, C.clientCpu, C.connections, C.overlaps],
  herd: [C.ops, C.p50('hand-off'), C.p99('hand-off'), C.max('hand-off'), C.waitP99, C.commands, C.scripts, C.cpu, C.handOffCommands, C.handOffCpu, C.clientCpu, C.connections, C.overlaps],
  many: [C.ops, C.p50('hand-off'), C.p99('hand-off'), C.max('hand-off'), C.commands, C.cpu, C.clientCpu, C.connections, C.memory, C.overlaps],
};

/** The medians of one library in one scenario variant, and how many of its runs finished. */
export interface Row {
  adapter: AdapterSpec;
  medians: Map<Column, number>;
  finished: number;
  runs: number;
  errors: string[];
}

export function rows(input: ReportInput, scenario: ScenarioId, size: number | undefined): Row[] {
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

/** A run's rows by scenario and size, each computed once, and the lookup of one library's medians in them. */
export function indexRows(input: ReportInput): { rowsOf: (scenario: ScenarioId, size: number | undefined) => Row[]; at: Lookup } {
  const cache = new Map<string, Row[]>();
  const rowsOf = (scenario: ScenarioId, size: number | undefined) => {
    const key = `${scenario}:${size}`;
    if (!cache.has(key)) cache.set(key, rows(input, scenario, size));
    return cache.get(key)!;
  };
  const at: Lookup = (scenario, adapter, size) => rowsOf(scenario, size).find((r) => r.adapter.id === adapter && r.finished > 0)?.medians;
  return { rowsOf, at };
}

/** The best peer's median of a column (relock and the floors are compared with it, not to it). */
export function best(all: Row[], column: Column): number | undefined {
  const values = all.filter((r) => r.adapter.kind === 'peer').map((r) => r.medians.get(column)).filter((v): v is number => v !== undefined && Number.isFinite(v));
  if (values.length === 0 || column.better === 'none') return undefined;
  return column.better === 'high' ? Math.max(...values) : Math.min(...values);
}

export function cell(row: Row, column: Column, reference: number | undefined): string {
  const value = row.medians.get(column);
  if (value === undefined) return row.finished === 0 ? '—' : '';
  const ratio = reference !== undefined && reference !== 0 && Number.isFinite(value) ? ` (${(value / reference).toFixed(2)}×)` : '';
  return `${column.format(value)}${ratio}`;
}

/** A library's name in the tables: relock and its variants in bold, floors in italics. */
export function nameOf(adapter: AdapterSpec): string {
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
export function unavailable(row: Row): string | undefined {
  return row.finished === 0 && row.errors.length > 0 && row.errors.every((error) => error.startsWith('not available')) ? row.errors.join('; ') : undefined;
}

export function label(row: Row): string {
  const name = nameOf(row.adapter);
  if (unavailable(row)) return `${name} ²`;
  return row.finished < row.runs ? `${name} ¹` : name;
}

export function table(all: Row[], columns: Column[], references: (column: Column) => number | undefined, extra?: { label: string; value: (row: Row) => string }): string {
  const head = ['library', ...(extra ? [extra.label] : []), ...columns.map((c) => c.label)];
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`];
  for (const row of all) {
    lines.push(`| ${[label(row), ...(extra ? [extra.value(row)] : []), ...columns.map((c) => cell(row, c, references(c)))].join(' | ')} |`);
  }
  return lines.join('\n');
}

export function failures(all: Row[]): string {
  const notes = all
    .filter((row) => row.finished < row.runs)
    .map((row) => {
      const reason = unavailable(row);
      if (reason) return `² ${row.adapter.id}: ${reason}; no figures.`;
      return `¹ ${row.adapter.id}: ${row.runs - row.finished} of ${row.runs} runs did not finish (${row.errors.join('; ')}); ${row.finished > 0 ? `the figures are the median of the ${row.finished} that did` : 'no figures'}.`;
    });
  return notes.length > 0 ? `\n\n${notes.join('\n')}` : '';
}

export const yes = (ok: boolean) => (ok ? '**met**' : '**missed**');

export interface Lookup {
  (scenario: ScenarioId, adapter: string, size?: number): Map<Column, number> | undefined;
}

export const value = (figures: Map<Column, number>, column: Column) => figures.get(column) ?? Number.NaN;

export function chartData(all: Row[], figures: { column: Column; name: string }[], waiters?: number): Datum[] {
  return all.flatMap((row) =>
    figures.flatMap(({ column, name }) => {
      const value = row.medians.get(column);
      return value === undefined ? [] : [{ library: row.adapter.id, kind: row.adapter.kind, figure: name, value, ...(waiters !== undefined ? { waiters } : {}) }];
    }),
  );
}
