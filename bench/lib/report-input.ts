// What the report is made from: one run's records, and what the run was.
import type { AdapterSpec } from '../adapters/types.ts';
import type { Sizes } from './plan.ts';
import type { ScenarioId } from './protocol.ts';
import type { CaseResult } from './runner.ts';

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
  /** The round trip of the link (lib/link-proxy.ts) the clients reached Redis over, when `--link` was given. */
  linkMs?: number;
  /** A full run's headline scenarios measured again over a link of `ms` round trip (run.ts, LINKED). */
  linked?: { ms: number; records: Record_[] };
}
