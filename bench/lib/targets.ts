// The targets of docs/benchmarks.md, checked as ratios within one run: relock's lock against the
// floors and the peers, and the fair lock's hand-off.
import { C, fixed, integer, kib, percent, value, yes, type Column, type Lookup } from './columns.ts';
import { TARGETS as T } from './plan.ts';
import type { ReportInput } from './report-input.ts';

export function targets(input: ReportInput, at: Lookup): string {
  const lines = ['| target | relock | verdict |', '| --- | --- | --- |'];
  const peers = input.adapters.filter((a) => a.kind === 'peer');
  const relockUn = at('uncontended', 'relock');
  /** A row of one rate against another in this run, met at `target` × the other's or more. */
  const rate = (label: string, target: number, mine: number, theirs: number, more = '') =>
    lines.push(`| ${label} | ${integer(mine)} ops/s vs ${integer(theirs)}: ${(mine / theirs).toFixed(2)}×${more} | ${yes(mine / theirs >= target)} |`);
  if (relockUn) {
    const ops = relockUn.get(C.ops) ?? Number.NaN;
    const floor = at('uncontended', 'floor-poll')?.get(C.ops);
    if (floor !== undefined) rate(`1. uncontended: ≥ ${T.uncontended.floor}× the SET NX floor (floor-poll)`, T.uncontended.floor, ops, floor);
    const fastest = peers.map((p) => ({ id: p.id, ops: at('uncontended', p.id)?.get(C.ops) })).filter((p): p is { id: string; ops: number } => p.ops !== undefined).sort((a, b) => b.ops - a.ops)[0];
    if (fastest) lines.push(`| 1. uncontended: level with the fastest peer (≥ ${T.uncontended.fastestPeer}×) | vs ${fastest.id} ${integer(fastest.ops)} ops/s: ${(ops / fastest.ops).toFixed(2)}× | ${yes(ops / fastest.ops >= T.uncontended.fastestPeer)} |`);
    const scripts = relockUn.get(C.scripts);
    const commands = relockUn.get(C.commands);
    if (scripts !== undefined && commands !== undefined) {
      lines.push(`| 1. uncontended: ${T.uncontended.scriptCalls} round trips per acquire+release | ${fixed(scripts)} script calls and no other command from the client (${fixed(commands)} commands in all, the calls included) | ${yes(Math.abs(scripts - T.uncontended.scriptCalls) < 0.01)} |`);
      const inner = commands - scripts;
      lines.push(`| 1. uncontended: ≤ ${T.uncontended.innerCommands} commands inside the scripts per acquire+release | ${fixed(inner)} | ${yes(inner <= T.uncontended.innerCommands + 0.01)} |`);
    }
    const semaphore = at('uncontended', 'redis-semaphore')?.get(C.ops);
    if (semaphore !== undefined) {
      const before = at('uncontended', 'relock-0.1.0')?.get(C.ops);
      const then = before === undefined ? '' : `; relock before this change: ${(before / semaphore).toFixed(2)}×`;
      rate(`1. uncontended: ≥ ${T.uncontended.redisSemaphore}× redis-semaphore in the same run`, T.uncontended.redisSemaphore, ops, semaphore, then);
    }
    const redlock = at('uncontended', 'redlock')?.get(C.ops);
    if (redlock !== undefined) rate(`1. uncontended: ≥ ${T.uncontended.redlock}× redlock in the same run`, T.uncontended.redlock, ops, redlock);
    const cpu = relockUn.get(C.clientCpu);
    const floorCpu = at('uncontended', 'floor-poll')?.get(C.clientCpu);
    if (cpu !== undefined && floorCpu !== undefined) lines.push(`| 1. uncontended: client CPU per round ≤ ${T.uncontended.clientCpuVsFloor}× the SET NX floor's | ${fixed(cpu)} µs vs ${fixed(floorCpu)} µs: ${(cpu / floorCpu).toFixed(2)}× | ${yes(cpu / floorCpu <= T.uncontended.clientCpuVsFloor)} |`);
    // Issue 34 point 3: each client family against its own floor, so that the client's cost and relock's are split.
    for (const [mine, floorId, client] of [['relock-node-redis', 'floor-node-redis', 'node-redis'], ['relock-glide', 'floor-glide', 'GLIDE']] as const) {
      const over = at('uncontended', mine)?.get(C.ops);
      const own = at('uncontended', floorId)?.get(C.ops);
      if (over === undefined || own === undefined) continue;
      const vsIoredis = floor === undefined ? '' : `; that floor is ${(own / floor).toFixed(2)}× floor-poll's (ioredis)`;
      rate(`1. uncontended over ${client}: ≥ ${T.uncontended.clientFloor}× the SET NX floor over ${client} (${floorId})`, T.uncontended.clientFloor, over, own, vsIoredis);
    }
  }
  const relockC = at('contended', 'relock');
  if (relockC) {
    const utilisation = relockC.get(C.utilisation) ?? Number.NaN;
    const toRelease = relockC.get(C.utilisationToRelease) ?? Number.NaN;
    const bestPeer = peers.map((p) => ({ id: p.id, util: at('contended', p.id)?.get(C.utilisation), toRelease: at('contended', p.id)?.get(C.utilisationToRelease) })).filter((p): p is { id: string; util: number; toRelease: number } => p.util !== undefined).sort((a, b) => b.util - a.util)[0];
    const verdict = utilisation >= T.contended.utilisation ? yes(true) : toRelease >= T.contended.utilisation ? '**met** only counting the release round trip as held' : yes(false);
    lines.push(`| 3. contended: utilisation ≥ ${T.contended.utilisation} | ${fixed(utilisation)} (${fixed(toRelease)} to release)${bestPeer ? `; best peer ${bestPeer.id}: ${fixed(bestPeer.util)} (${fixed(bestPeer.toRelease)})` : ''} | ${verdict} |`);
    const p99 = relockC.get(C.p99('wait'));
    const bestP99 = peers.map((p) => ({ id: p.id, p99: at('contended', p.id)?.get(C.p99('wait')) })).filter((p): p is { id: string; p99: number } => p.p99 !== undefined).sort((a, b) => a.p99 - b.p99)[0];
    if (p99 !== undefined && bestP99) lines.push(`| 3. contended: p99 wait no worse than the best peer's | ${fixed(p99)} ms vs ${bestP99.id} ${fixed(bestP99.p99)} ms | ${yes(p99 <= bestP99.p99)} |`);
  }
  const herdSizes = input.sizes.herd.filter((size) => at('herd', 'relock', size));
  if (herdSizes.length > 0) {
    const cpu = herdSizes.map((size) => at('herd', 'relock', size)?.get(C.cpu) ?? Number.NaN);
    const spread = Math.max(...cpu) / Math.min(...cpu);
    lines.push(`| 4. herd: Redis CPU/acq flat (max/min ≤ ${T.herd.cpuSpread}) over ${herdSizes.join(', ')} waiters | ${cpu.map(fixed).join(', ')} µs: ${spread.toFixed(2)}× | ${yes(spread <= T.herd.cpuSpread)} |`);
    if (herdSizes.includes(200)) {
      const mine = at('herd', 'relock', 200)?.get(C.cpu) ?? Number.NaN;
      const polling = peers.filter((p) => p.waiting === 'polling').map((p) => ({ id: p.id, cpu: at('herd', p.id, 200)?.get(C.cpu) })).filter((p): p is { id: string; cpu: number } => p.cpu !== undefined).sort((a, b) => a.cpu - b.cpu);
      const lowest = polling[0];
      if (lowest) lines.push(`| 4. herd: Redis CPU/acq at 200 waiters below every polling peer's | ${fixed(mine)} µs vs lowest polling peer ${lowest.id} ${fixed(lowest.cpu)} µs | ${yes(mine < lowest.cpu)} |`);
    }
    const commands = herdSizes.map((size) => at('herd', 'relock', size)?.get(C.commands) ?? Number.NaN);
    lines.push(`| 4. herd: ≤ ${T.herd.commands} Redis commands/acq (scripts' inner commands included) | ${commands.map(fixed).join(', ')} at ${herdSizes.join(', ')} waiters | ${yes(Math.max(...commands) <= T.herd.commands)} |`);
  }
  const relockMany = at('many', 'relock', input.sizes.names);
  if (relockMany) {
    const connections = relockMany.get(C.connections) ?? Number.NaN;
    lines.push(`| 5. many locks: ${T.many.connections} connections per client | ${fixed(connections)} | ${yes(connections === T.many.connections)} |`);
    const memory = relockMany.get(C.memory);
    if (memory !== undefined) lines.push(`| 5. many locks: heap per waiting acquirer reported | ${kib(memory)} | reported |`);
  }
  return lines.join('\n');
}

/** The reason relock-fair gave for not running, or undefined. */
function fairUnavailable(input: ReportInput): string | undefined {
  const record = input.records.find((r) => r.adapter === 'relock-fair' && !r.result.ok && r.result.error.startsWith('not available'));
  return record && !record.result.ok ? record.result.error : undefined;
}

/**
 * The fair lock's targets, as ratios in this run: the fair lock against the best peer and the pub/sub
 * floor, and the default lock() against that floor; rows only for the scenarios that ran. "missed"
 * where a figure misses or relock-fair has none.
 */
export function fairTargets(input: ReportInput, at: Lookup): string {
  const contended = input.scenarios.includes('contended');
  const herd = input.scenarios.includes('herd');
  if (!contended && !herd) return '';
  const lines = ['| target | measured | verdict |', '| --- | --- | --- |'];
  const row = (target: string, measured: string, verdict: string) => lines.push(`| ${target} | ${measured} | ${verdict} |`);
  const ran = input.adapters.some((a) => a.id === 'relock-fair');
  const refused = fairUnavailable(input);
  const absent = (scenario: string): [string, string] =>
    !ran ? ['—', 'not measured: relock-fair was not in this run'] : refused ? ['—', '**missed**: not available (below)'] : ['—', `**missed**: relock-fair has no figures in ${scenario}`];
  const load = (where: string) => `${where}: ≤ ${T.fair.commands} Redis commands and ≤ ${T.fair.scripts} script calls per acquisition`;

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
        `3. fair: p99 wait ≤ ${T.fair.p99VsPeer}× the best peer's`,
        (f) => {
          if (!bestPeer) return ['—', 'not measured: no peer in this run'];
          const ratio = value(f, C.p99('wait')) / bestPeer.p99;
          return [`${fixed(value(f, C.p99('wait')))} ms vs ${bestPeer.id} ${fixed(bestPeer.p99)} ms: ${ratio.toFixed(3)}×`, yes(ratio <= T.fair.p99VsPeer)];
        },
      ],
      [
        `3. fair: p99 wait ≤ ${T.fair.p99VsFloor}× floor-pubsub's`,
        (f) => {
          if (!floor) return noFloor;
          const ratio = value(f, C.p99('wait')) / value(floor, C.p99('wait'));
          return [`${fixed(value(f, C.p99('wait')))} ms vs ${fixed(value(floor, C.p99('wait')))} ms: ${ratio.toFixed(3)}×`, yes(ratio <= T.fair.p99VsFloor)];
        },
      ],
      [
        `3. fair: utilisation ≥ ${T.fair.utilisationVsFloor}× floor-pubsub's`,
        (f) => {
          if (!floor) return noFloor;
          const ratio = value(f, C.utilisation) / value(floor, C.utilisation);
          return [`${fixed(value(f, C.utilisation))} vs ${fixed(value(floor, C.utilisation))}: ${ratio.toFixed(3)}×`, yes(ratio >= T.fair.utilisationVsFloor)];
        },
      ],
      [
        `3. fair: overtaken by a later caller ≤ ${percent(T.fair.overtaken)}`,
        (f) => {
          const share = value(f, C.overtaken);
          const others = ['relock', 'floor-pubsub'].map((id) => ({ id, share: at('contended', id)?.get(C.overtaken) })).filter((o): o is { id: string; share: number } => o.share !== undefined);
          return [`${percent(share)}${others.length > 0 ? ` (${others.map((o) => `${o.id} ${percent(o.share)}`).join(', ')})` : ''}`, yes(share <= T.fair.overtaken)];
        },
      ],
      [
        load('3. fair'),
        (f) => {
          const commands = value(f, C.commands);
          const scripts = value(f, C.scripts);
          return [`${fixed(commands)} commands, ${fixed(scripts)} script calls`, yes(commands <= T.fair.commands && scripts <= T.fair.scripts)];
        },
      ],
    ];
    for (const [target, measure] of fairRows) row(target, ...(fair ? measure(fair) : absent('scenario 3')));
  }

  if (herd) {
    const sizes = input.sizes.herd.filter((size) => at('herd', 'relock-fair', size));
    const flat = `4. herd, fair: Redis CPU/acq flat from 50 to 800 waiters (max/min ≤ ${T.fair.cpuSpread})`;
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
        yes(Math.max(...commands) <= T.fair.commands && Math.max(...scripts) <= T.fair.scripts),
      );
      const cpu = figures.map((f) => value(f, C.cpu));
      const spread = Math.max(...cpu) / Math.min(...cpu);
      const missing = [50, 800].filter((size) => !sizes.includes(size));
      row(
        flat,
        `${cpu.map(fixed).join(', ')} µs at ${sizes.join(', ')} waiters: ${spread.toFixed(2)}×${missing.length > 0 ? ` (${missing.join(' and ')} not run)` : ''}`,
        missing.length > 0 ? `${yes(spread <= T.fair.cpuSpread)} over the sizes run` : yes(spread <= T.fair.cpuSpread),
      );
    }
  }

  if (contended) {
    const lock = at('contended', 'relock');
    const floor = at('contended', 'floor-pubsub');
    const utilTarget = `3. lock(): utilisation ≥ ${T.lock.utilisationVsFloor}× floor-pubsub's`;
    const p99Target = "3. lock(): p99 wait no worse than floor-pubsub's";
    if (!lock || !floor) {
      const why: [string, string] = ['—', !lock ? 'not measured: relock has no figures in scenario 3' : 'not measured: floor-pubsub was not in this run'];
      row(utilTarget, ...why);
      row(p99Target, ...why);
    } else {
      const ratio = value(lock, C.utilisation) / value(floor, C.utilisation);
      row(utilTarget, `${fixed(value(lock, C.utilisation))} vs ${fixed(value(floor, C.utilisation))}: ${ratio.toFixed(3)}×`, yes(ratio >= T.lock.utilisationVsFloor));
      const p99 = value(lock, C.p99('wait'));
      const floorP99 = value(floor, C.p99('wait'));
      row(p99Target, `${fixed(p99)} ms vs ${fixed(floorP99)} ms: ${(p99 / floorP99).toFixed(3)}×`, yes(p99 <= floorP99));
    }
  }
  const note = refused ? `\n\nNot available: relock-fair has no figures (${refused.replace(/^not available: /, '')}).` : '';
  return `### Fair lock and hand-off\n\nRatios within this run; the fair lock is *relock-fair* (\`client.fairLock(name)\`), \`lock()\` is **relock**.\n\n${lines.join('\n')}${note}`;
}
