// Node faults (issue 17), for every kind, over a Redis Cluster or a Redlock quorum: in-process
// LockClients loop over lock names spread across the nodes (so that some live on the node the
// scenario faults and some on healthy ones), each section logged on the shared clock with the names
// it held, the nodes they live on and how it ended. What is judged, per kind: overlaps per name (the
// family checker's `excesses`), false losses (a hold signalled lost, or a release refused as not
// held, on nodes that were healthy the whole run: `falseLosses`), and, once every lease was released
// and the clients closed, holds that no lease owns (owner fields left in Redis: `phantomHolds`).
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { LockClient, type Lease, type Lock } from '../../src/index.ts';
import { excesses, falseLosses, phantomHolds, type NodeSection, type OwnerField, type Overlap, type Unclean } from './checker.ts';
import { MODE, record } from './harness.ts';
import { heldEntry, now, type Entry, type LockKind } from './protocol.ts';

export const KINDS: readonly LockKind[] = ['lock', 'fair-lock', 'rw-lock', 'semaphore', 'multi-lock'];

/** Semaphore: the limit of each name, and the most permits one acquire asks for. */
export const PERMITS = 2;
const MAX_PERMITS = 2;
const READ_RATIO = 0.7;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Where a name's keys live: a node's label (a Cluster master), or the quorum's. */
export type NodeOf = (name: string) => string;

/**
 * `perNode` fresh names for each node, by `nodeOf` (a Cluster: names are drawn until each master
 * serves that many; a Redlock quorum has one node, the quorum).
 */
export function spreadNames(label: string, nodes: readonly string[], nodeOf: NodeOf, perNode: number): string[] {
  const names: string[] = [];
  const count = new Map(nodes.map((node) => [node, 0]));
  while (names.length < nodes.length * perNode) {
    const name = `${label}:${randomUUID().slice(0, 12)}`;
    const node = nodeOf(name);
    if ((count.get(node) ?? perNode) >= perNode) continue;
    count.set(node, count.get(node)! + 1);
    names.push(name);
  }
  return names;
}

export interface LoopOptions {
  readonly kind: LockKind;
  /** The names, and where each lives: every node has at least 2 (a multi-lock's, 3). */
  readonly names: readonly string[];
  readonly nodes: readonly string[];
  readonly nodeOf: NodeOf;
  readonly leaseMs: number;
  /** The share of sections that hold long (1.2 to 2 leases): through renewals, and through a fault. */
  readonly longShare: number;
  /** A section waits this long for its lock at most. @default 2_000 */
  readonly waitMs?: number;
  /** Redlock: where a section is held, read right after it was acquired (see heldOnMasters). */
  readonly heldOn?: (clientId: string, names: readonly string[]) => Promise<NonNullable<NodeSection['heldOn']>>;
}

/**
 * Loops over one kind's names on several clients, one loop per client and node, each on the names of
 * its node: while one node is faulted, the loops of the others go on (and hold there), whatever the
 * loops of that node wait for. No client runs two loops over one name, so none waits for itself.
 * A multi-lock loop takes one of the first two names of its node and the third name of the next node
 * (that node's loop never takes it): its members live on two masters of a Cluster.
 */
export class NodeLoops {
  readonly sections: NodeSection[] = [];
  readonly unclean: Unclean[] = [];
  readonly errors = new Map<string, number>();
  longestReleaseMs = 0;
  /** Leases whose signal aborted after their holder called release() (a renewal racing the release). */
  signalledInRelease = 0;
  #stopped = false;
  readonly #done: Promise<void>[];
  readonly #options: LoopOptions;
  readonly #clients: readonly LockClient[];
  readonly #byNode: readonly (readonly string[])[];

  constructor(clients: readonly LockClient[], options: LoopOptions) {
    this.#options = options;
    this.#clients = clients;
    this.#byNode = options.nodes.map((node) => options.names.filter((name) => options.nodeOf(name) === node));
    this.#done = clients.flatMap((client, index) => options.nodes.map((_, node) => this.#loop(client, index, node)));
  }

  #count(error: unknown): string {
    const code = String((error as { code?: unknown })?.code ?? (error as Error)?.name ?? error);
    this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
    return code;
  }

  /** What the next section of the loop on node `node` takes: its names, its side or permits, and how. */
  #pick(client: LockClient, node: number): { names: string[]; mode?: 'read' | 'write'; permits?: number; acquire: (waitMs: number) => Promise<Lease> } {
    const { kind } = this.#options;
    const own = this.#byNode[node]!;
    const one = own[Math.floor(Math.random() * 2)]!;
    switch (kind) {
      case 'fair-lock':
        return { names: [one], acquire: (waitMs) => client.fairLock(one).acquire({ waitMs }) };
      case 'rw-lock': {
        const mode = Math.random() < READ_RATIO ? 'read' : 'write';
        const rw = client.readWriteLock(one);
        return { names: [one], mode, acquire: (waitMs) => (mode === 'read' ? rw.readLock() : rw.writeLock()).acquire({ waitMs }) };
      }
      case 'semaphore': {
        const permits = 1 + Math.floor(Math.random() * MAX_PERMITS);
        return { names: [one], permits, acquire: (waitMs) => client.semaphore(one, { permits: PERMITS }).acquire({ waitMs, permits }) };
      }
      case 'multi-lock': {
        const partner = this.#byNode[(node + 1) % this.#byNode.length]![2]!;
        const members: Lock[] = [client.lock(one), client.lock(partner)];
        return { names: [one, partner], acquire: (waitMs) => client.multiLock(members).acquire({ waitMs }) };
      }
      default:
        return { names: [one], acquire: (waitMs) => client.lock(one).acquire({ waitMs }) };
    }
  }

  async #loop(client: LockClient, index: number, node: number): Promise<void> {
    const { leaseMs, longShare, nodeOf } = this.#options;
    while (!this.#stopped) {
      const picked = this.#pick(client, node);
      const asked = now();
      let lease: Lease;
      try {
        lease = await picked.acquire(this.#options.waitMs ?? 2_000);
      } catch (error) {
        // No excuse for what its attempt took: relock gives a failed attempt's hold back (docs/guarantees.md, Orphaned holds).
        this.#count(error);
        await sleep(20);
        continue;
      }
      const start = now();
      let lostAt: number | null = lease.signal.aborted ? start : null;
      let lostCode: string | undefined;
      const onLost = () => {
        lostAt ??= now();
        lostCode = String((lease.signal.reason as { code?: unknown })?.code ?? 'Error');
      };
      if (lease.signal.aborted) onLost();
      else lease.signal.addEventListener('abort', onLost, { once: true });
      // Read while the lease is held (awaited before the release): a read after it would find nothing.
      const heldOn = this.#options.heldOn?.(client.id, picked.names);
      const long = Math.random() < longShare;
      const workMs = long ? leaseMs * (1.2 + 0.8 * Math.random()) : 2 + Math.random() * 8;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, workMs);
        function done() {
          clearTimeout(timer);
          lease.signal.removeEventListener('abort', done);
          resolve();
        }
        // A long hold stops working when it learns its loss, as the API asks.
        if (lease.signal.aborted) done();
        else lease.signal.addEventListener('abort', done, { once: true });
      });
      const end = lostAt ?? now();
      const where = await heldOn;
      // What the holder learnt while it held; a signal that aborts once release() was called is counted apart.
      lease.signal.removeEventListener('abort', onLost);
      let release = 'ok';
      try {
        await lease.release();
      } catch (error) {
        release = String((error as { code?: unknown })?.code ?? (error as Error)?.name ?? 'Error');
        if (release !== 'ERR_LOCK_NOT_HELD') this.#count(error);
      }
      if (lostAt === null && lease.signal.aborted) this.signalledInRelease++;
      const releasedAt = now();
      this.longestReleaseMs = Math.max(this.longestReleaseMs, releasedAt - end);
      if (lostAt !== null || release !== 'ok') for (const name of picked.names) this.unclean.push({ clientId: client.id, name, at: releasedAt });
      this.sections.push({
        client: index,
        token: lease.fencingToken,
        names: picked.names,
        nodes: [...new Set(picked.names.map(nodeOf))],
        ...(where ? { heldOn: where } : {}),
        asked,
        start,
        end,
        lostAt,
        ...(lostCode === undefined ? {} : { lostCode }),
        release,
        releasedAt,
        ...(picked.mode ? { mode: picked.mode } : {}),
        ...(picked.permits === undefined ? {} : { permits: picked.permits }),
      });
    }
  }

  /** The names the loops pick from. */
  get names(): readonly string[] {
    return this.#options.names;
  }

  /** The clients' ids, by index. */
  get clientIds(): string[] {
    return this.#clients.map((client) => client.id);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#done);
  }
}

/** The overlaps of a kind's sections, name by name: a section beyond what its primitive allows beside the others holding that name. */
export function overlapsOf(kind: LockKind, sections: readonly NodeSection[]): Overlap[] {
  const byName = new Map<string, Entry[]>();
  for (const section of sections) {
    for (const name of section.names) {
      const entry = heldEntry(section);
      byName.set(name, [...(byName.get(name) ?? []), entry]);
    }
  }
  const overlaps: Overlap[] = [];
  for (const entries of byName.values()) {
    if (kind === 'semaphore') overlaps.push(...excesses(entries, (e) => e.permits ?? 1, PERMITS));
    else if (kind === 'rw-lock') {
      // A write counts as the whole capacity: beside it, any other section is one too many.
      const capacity = Math.max(1, entries.length);
      overlaps.push(...excesses(entries, (e) => (e.mode === 'read' ? 1 : capacity), capacity));
    } else overlaps.push(...excesses(entries, () => 1, 1));
  }
  return overlaps;
}

const OWNER = /([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})/;

/**
 * Every owner in the lock hashes under `prefix` on `node` (a connection to one master): a hash's
 * fields and values that name `<client id>:<hold id>` (a lock's or fair lock's owner field, a
 * semaphore's, a read-write lock's `r:`/`w:` field and `writer`, a Redlock semaphore's slot holder),
 * with the key's PTTL. Waiting queues (lists, zsets) are not holds and are not read.
 */
export async function ownerFields(label: string, node: Redis, prefix: string): Promise<OwnerField[]> {
  const fields: OwnerField[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000, 'TYPE', 'hash');
    cursor = next;
    for (const key of keys) {
      const [hash, pttl] = await Promise.all([node.hgetall(key), node.pttl(key)]);
      if (pttl === -2) continue;
      const name = key.slice(key.indexOf('{') + 1, key.indexOf('}'));
      const owners = new Set<string>();
      for (const [field, value] of Object.entries(hash)) {
        for (const text of [field, value]) {
          const owner = OWNER.exec(text)?.[1];
          if (owner) owners.add(owner);
        }
      }
      for (const owner of owners) fields.push({ node: label, key, name, owner, remainingMs: pttl });
    }
  } while (cursor !== '0');
  return fields;
}

/**
 * Redlock: the masters that hold every one of `names` for `clientId` (an owner field of that client
 * in each name's hashes), read on each master's own connection. A master that does not answer within
 * `timeoutMs` (the frozen one) is counted as holding: the check stays strict where it cannot see.
 */
export async function heldOnMasters(masters: Topology['masters'], prefix: string, clientId: string, names: readonly string[], timeoutMs = 200): Promise<NonNullable<NodeSection['heldOn']>> {
  const holds = await Promise.all(
    masters.map(async (master) => {
      const read = ownerFields(master.label, master.connection, prefix).then((fields) =>
        names.every((name) => fields.some((field) => field.name === name && field.owner.startsWith(`${clientId}:`))),
      );
      const late = new Promise<boolean>((resolve) => setTimeout(resolve, timeoutMs, true).unref());
      return Promise.race([read, late]);
    }),
  );
  return { masters: masters.filter((_, i) => holds[i]).map((master) => master.label), quorum: Math.floor(masters.length / 2) + 1 };
}

/** What a node-fault run found for one kind. */
export interface NodeReport {
  readonly kind: string;
  readonly acquisitions: number;
  readonly overlaps: readonly Overlap[];
  readonly falseLosses: readonly NodeSection[];
  /** Releases refused as not held, without a signalled loss, on healthy nodes. */
  readonly refusedReleases: readonly NodeSection[];
  readonly phantoms: readonly OwnerField[];
  readonly lostOnFaulted: number;
  readonly lost: number;
  readonly longestWaitMs: number;
  readonly longestReleaseMs: number;
  readonly faults: number;
  readonly durationMs: number;
  readonly line: string;
}

/** Checks one kind's loops (stopped) against the owner fields read after the run; prints its line and counts it in the total. */
export function judge(
  label: string,
  scenario: string,
  kind: LockKind,
  loops: NodeLoops,
  run: { readonly faulted: ReadonlySet<string>; readonly faults: number; readonly fields: readonly OwnerField[]; readonly readAt: number; readonly leaseMs: number; readonly durationMs: number; readonly notes?: readonly string[]; readonly counted?: boolean; readonly shared?: boolean },
): NodeReport {
  const sections = loops.sections;
  const overlaps = overlapsOf(kind, sections);
  const found = falseLosses(sections, run.faulted);
  const ids = new Set(loops.clientIds);
  const names = new Set(loops.names);
  // Only this kind's clients and names: several kinds may share the nodes.
  const fields = run.fields.filter((field) => ids.has(field.owner.slice(0, field.owner.indexOf(':'))) && names.has(field.name));
  const phantoms = phantomHolds(fields, loops.unclean, { at: run.readAt, leaseMs: run.leaseMs });
  const longestWaitMs = sections.reduce((most, s) => Math.max(most, s.start - s.asked), 0);
  const failed = [...loops.errors].map(([code, n]) => `${code} ${n}`).join(', ') || '0';
  const line =
    `[faults ${MODE}] ${label} ${kind} ${scenario}: acquisitions ${sections.length}, overlaps ${overlaps.length}, false losses ${found.lost.length}, ` +
    `phantom holds ${phantoms.length}, releases refused as not held ${found.refused.length}, faults injected ${run.faults}, ` +
    `lost leases signalled ${sections.filter((s) => s.lostAt !== null).length} (on the faulted node ${found.lostOnFaulted}), ` +
    `longest wait ${Math.round(longestWaitMs)} ms, longest release ${Math.round(loops.longestReleaseMs)} ms, signals aborted during release ${loops.signalledInRelease}, ${[...(run.notes ?? []), `errors ${failed}`].join(', ')}, ` +
    `${(run.durationMs / 1000).toFixed(1)} s`;
  console.log(line);
  const show = (s: NodeSection) => `client ${s.client} ${s.names.join('+')} on ${s.nodes.join('+')}${s.heldOn ? ` (held on ${s.heldOn.masters.join(', ')})` : ''} waited ${(s.start - s.asked).toFixed(0)} ms, [${s.start.toFixed(0)}, ${s.end.toFixed(0)}] lost ${s.lostAt?.toFixed(0) ?? '-'} release ${s.release} at ${s.releasedAt.toFixed(0)}`;
  const entry = (e: Entry) => `client ${e.worker} token ${e.token}${e.mode ? ` ${e.mode}` : ''}${e.permits ? ` ${e.permits} permits` : ''} [${e.start.toFixed(0)}, ${e.end.toFixed(0)}] lost ${e.lostAt?.toFixed(0) ?? '-'}`;
  for (const o of overlaps.slice(0, 3)) console.log(`  overlap: ${entry(o.later)} began ${o.ms.toFixed(1)} ms before ${entry(o.earlier)} ended`);
  for (const s of found.lost.slice(0, 3)) console.log(`  false loss: ${show(s)}`);
  for (const s of sections.filter((s) => s.lostAt !== null && !found.lost.includes(s)).slice(0, 3)) console.log(`  excused loss: ${show(s)}`);
  for (const s of found.refused.slice(0, 3)) console.log(`  release refused: ${show(s)}`);
  for (const f of phantoms.slice(0, 3)) console.log(`  phantom hold: ${f.owner} in ${f.key} on ${f.node}, PTTL ${f.remainingMs} ms`);
  // A negative control's failures are its point: left out of the total.
  if (run.counted !== false) record({
    kind: `${label} ${kind}`,
    // Kinds that ran side by side share one run: its time counts once in the total.
    durationMs: run.shared ? 0 : run.durationMs,
    faults: { length: run.faults },
    report: {
      acquisitions: sections.length,
      fifoJudged: 0,
      lostLeases: sections.filter((s) => s.lostAt !== null).length,
      longestWaitMs,
      longestStallMs: 0,
      staleWrites: 0,
      overlaps: { length: overlaps.length },
      overtaken: { length: 0 },
      falseLosses: found.lost.length,
      phantomHolds: phantoms.length,
    },
  });
  return {
    kind,
    acquisitions: sections.length,
    overlaps,
    falseLosses: found.lost,
    refusedReleases: found.refused,
    phantoms,
    lostOnFaulted: found.lostOnFaulted,
    lost: sections.filter((s) => s.lostAt !== null).length,
    longestWaitMs,
    longestReleaseMs: loops.longestReleaseMs,
    faults: run.faults,
    durationMs: run.durationMs,
    line,
  };
}

/** What each kind's report violates, one line per kind (every kind's summary line is printed before). */
export function violations(reports: readonly NodeReport[]): string[] {
  return reports.flatMap((r) => {
    const found = [
      r.overlaps.length > 0 ? `overlaps ${r.overlaps.length}` : '',
      r.falseLosses.length > 0 ? `false losses ${r.falseLosses.length}` : '',
      r.phantoms.length > 0 ? `phantom holds ${r.phantoms.length}` : '',
      r.refusedReleases.length > 0 ? `releases refused as not held ${r.refusedReleases.length}` : '',
      r.acquisitions === 0 ? 'no acquisition' : '',
    ].filter(Boolean);
    return found.length > 0 ? [`${r.kind}: ${found.join(', ')}`] : [];
  });
}

/** Where a node-fault run runs: a Cluster's masters, or a Redlock client's masters. */
export interface Topology {
  /** How the summary lines name it ('cluster', 'redlock'). */
  readonly label: string;
  /** Where names live, as nodeOf labels them: each Cluster master; the quorum, on Redlock. */
  readonly nodes: readonly string[];
  readonly nodeOf: NodeOf;
  /** A client of a run: its keys under `prefix`. */
  client(prefix: string, leaseMs: number): LockClient;
  /** Closes what client() opened beside the LockClients (after they were closed). */
  release?(): void;
  /** A connection to every master, by label, for reading what is left in Redis. */
  readonly masters: readonly { readonly label: string; readonly connection: Redis }[];
  /** Redlock: each section's masters are read right after it was acquired (NodeSection.heldOn). */
  readonly quorum?: boolean;
}

/** What a fault did: the nodes it touched (where no hold is judged false), how many faults, and notes for the line. */
export interface Injected {
  readonly faulted: ReadonlySet<string>;
  readonly faults: number;
  readonly notes?: readonly string[];
}

export interface NodeRunOptions {
  readonly scenario: string;
  readonly kinds: readonly LockKind[];
  readonly leaseMs: number;
  /** Clients, each running one loop per node and kind. @default 3 */
  readonly clients?: number;
  /** @default 0.2 */
  readonly longShare?: number;
  /** The loops run this long before the fault, and this long after it. @default 400, 1_000 */
  readonly warmMs?: number;
  readonly settleMs?: number;
  readonly fault: (names: ReadonlyMap<LockKind, readonly string[]>, prefix: string, clients: readonly LockClient[]) => Promise<Injected>;
  /** Runs after the clients closed, before Redis is read (the phantom control writes its field here). */
  readonly afterClose?: (names: ReadonlyMap<LockKind, readonly string[]>, prefix: string, clients: readonly LockClient[]) => Promise<void>;
  /** A client of the run, wrapped (the false-loss control slows its renewals). @default the topology's */
  readonly client?: (prefix: string, leaseMs: number) => LockClient;
  /** Left out of the total (a negative control). @default true */
  readonly counted?: boolean;
}

/**
 * One node-fault run: the kinds' loops on the same clients, over names spread across the nodes;
 * the fault; the loops stopped (every lease released or lost), the clients closed, Redis read; one
 * report per kind.
 */
export async function nodeRun(topology: Topology, options: NodeRunOptions): Promise<NodeReport[]> {
  const started = now();
  const prefix = `relock-nodes-${randomUUID().slice(0, 8)}`;
  const make = options.client ?? ((p: string, leaseMs: number) => topology.client(p, leaseMs));
  const clients = Array.from({ length: options.clients ?? 3 }, () => make(prefix, options.leaseMs));
  for (const client of clients) client.on('error', () => undefined);
  const names = new Map(options.kinds.map((kind) => [kind, spreadNames(kind, topology.nodes, topology.nodeOf, kind === 'multi-lock' ? 3 : 2)] as const));
  const loops = new Map(
    options.kinds.map((kind) => {
      const loop = new NodeLoops(clients, {
        kind,
        names: names.get(kind)!,
        nodes: topology.nodes,
        nodeOf: topology.nodeOf,
        leaseMs: options.leaseMs,
        longShare: options.longShare ?? 0.2,
        ...(topology.quorum ? { heldOn: (clientId: string, held: readonly string[]) => heldOnMasters(topology.masters, prefix, clientId, held) } : {}),
      });
      return [kind, loop] as const;
    }),
  );
  let injected: Injected;
  try {
    await sleep(options.warmMs ?? 400);
    injected = await options.fault(names, prefix, clients);
    await sleep(options.settleMs ?? 1_000);
  } finally {
    await Promise.all([...loops.values()].map((l) => l.stop()));
    await Promise.all(clients.map((client) => client.close()));
    // What the clients still had queued (a give-back behind an attempt, a command ioredis resends
    // after its connection closed) lands before the connections they were given are closed.
    await sleep(300);
    topology.release?.();
  }
  await options.afterClose?.(names, prefix, clients);
  const readAt = now();
  const fields = (await Promise.all(topology.masters.map((m) => ownerFields(m.label, m.connection, prefix)))).flat();
  const durationMs = readAt - started;
  return options.kinds.map((kind, index) =>
    judge(topology.label, options.scenario, kind, loops.get(kind)!, {
      shared: index > 0,
      faulted: injected.faulted,
      faults: injected.faults,
      fields,
      readAt,
      leaseMs: options.leaseMs,
      durationMs,
      ...(injected.notes ? { notes: injected.notes } : {}),
      ...(options.counted === false ? { counted: false } : {}),
    }),
  );
}
