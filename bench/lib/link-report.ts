// The section of a full run's report that sets the headline figures on loopback beside the same
// figures over a link of 0.5 ms round trip (run.ts measures them again over lib/link-proxy.ts): what
// users whose Redis is on the network see (issue 34 point 4).
import { C, indexRows, nameOf, type Column, type Lookup } from './columns.ts';
import { PROXY_HOP } from './link.ts';
import type { ReportInput } from './report-input.ts';

/** The figures compared, per headline scenario: [scenario, column, its name]. */
const FIGURES: readonly (readonly ['uncontended' | 'contended' | 'herd', Column, string])[] = [
  ['uncontended', C.ops, 'uncontended: acquire+release/s (1)'],
  ['uncontended', C.p99('round'), 'uncontended: round p99 ms (1)'],
  ['contended', C.utilisation, 'contended: utilisation (3)'],
  ['contended', C.p99('wait'), 'contended: wait p99 ms (3)'],
  ['herd', C.cpu, 'herd: Redis CPU µs/acq (4)'],
  ['herd', C.commands, 'herd: Redis commands/acq (4)'],
  ['herd', C.p99('hand-off'), 'herd: hand-off p99 ms (4)'],
];

export function linkSection(input: ReportInput, at: Lookup): string {
  if (!input.linked) return '';
  const herd = input.sizes.herd.includes(200) ? 200 : input.sizes.herd[0];
  const sizeOf = (scenario: string) => (scenario === 'herd' ? herd : undefined);
  const atLink = indexRows({ ...input, records: input.linked.records }).at;
  const libraries = input.adapters.filter((adapter) => input.linked!.records.some((record) => record.adapter === adapter.id));
  const lines = [
    `## Over a network link: ${input.linked.ms} ms round trip`,
    '',
    `The headline scenarios again, every client reaching the same Redis over a delaying TCP proxy set to ${input.linked.ms} ms round trip (bench/lib/link-proxy.ts: half of it each way), the same for every library, since nobody runs Redis on loopback; ${PROXY_HOP}. Medians of ${input.sizes.runs} runs; the herd at ${herd} waiters. Each cell: loopback → over the link.`,
    '',
    `| figure | ${libraries.map(nameOf).join(' | ')} |`,
    `| --- | ${libraries.map(() => '---:').join(' | ')} |`,
  ];
  for (const [scenario, column, name] of FIGURES) {
    const cells = libraries.map((adapter) => {
      const here = at(scenario, adapter.id, sizeOf(scenario))?.get(column);
      const there = atLink(scenario, adapter.id, sizeOf(scenario))?.get(column);
      if (there === undefined) return '—';
      return `${here === undefined ? '—' : column.format(here)} → ${column.format(there)}`;
    });
    if (cells.every((cell) => cell === '—')) continue;
    lines.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  const relock = atLink('uncontended', 'relock')?.get(C.ops);
  const floor = atLink('uncontended', 'floor-poll')?.get(C.ops);
  if (relock !== undefined && floor !== undefined) lines.push('', `Over the link, relock's uncontended rate is ${(relock / floor).toFixed(2)}× the SET NX floor's (on loopback: ${((at('uncontended', 'relock')?.get(C.ops) ?? Number.NaN) / (at('uncontended', 'floor-poll')?.get(C.ops) ?? Number.NaN)).toFixed(2)}×): the round trips, two for both, weigh more than what is done inside them.`);
  return lines.join('\n');
}
