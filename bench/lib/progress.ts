// One line per run on the terminal: what finished, how long it took, the headline figures.
import type { CaseResult } from './runner.ts';

export function formatCase(result: CaseResult): string {
  if (!result.ok) return result.seconds === 0 ? result.error : `FAILED after ${result.seconds.toFixed(1)} s: ${result.error.split('\n')[0]}`;
  const f = result.figures;
  const parts = [
    `${result.seconds.toFixed(1)} s`,
    `${f.acquisitions} acq`,
    `${Math.round(f.opsPerSec)} ops/s`,
    `p99 ${f.latency.p99.toFixed(2)} ms`,
    `${f.commandsPerAcq.toFixed(1)} cmd/acq`,
    `${f.cpuUsPerAcq.toFixed(0)} us CPU/acq`,
    `${f.connectionsPerClient.toFixed(1)} conn/client`,
  ];
  if (f.utilisation !== undefined) parts.push(`util ${f.utilisation.toFixed(2)} (${f.utilisationToRelease?.toFixed(2)} to release)`);
  if (f.overtaken !== undefined) parts.push(`overtaken ${(f.overtaken * 100).toFixed(1)}%, hand-off p50/p99 ${f.handOffP50.toFixed(2)}/${f.handOffP99?.toFixed(2)} ms`);
  if (f.bytesPerWaiter !== undefined) parts.push(`${Math.round(f.bytesPerWaiter)} B/waiter`);
  parts.push(`overlaps ${f.overlaps}`);
  return parts.join(', ');
}
