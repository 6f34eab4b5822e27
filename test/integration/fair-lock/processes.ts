// Child processes holding fair-lock waiters (child.ts), for the tests that kill, pause and restart
// real processes. Every child is killed when the test process exits.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { It } from '../../helpers/describe.ts';
import type { ChildConfig, FromChild, ToChild } from './child.ts';

const CHILD_FILE = fileURLToPath(new URL('./child.ts', import.meta.url));
const all = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of all) child.kill('SIGKILL');
});

export class Child {
  readonly clientId: string;
  readonly #process: ChildProcess;
  readonly #seen: FromChild[] = [];
  readonly #listeners = new Set<() => void>();

  private constructor(process: ChildProcess, clientId: string) {
    this.#process = process;
    this.clientId = clientId;
    process.on('message', (message: FromChild) => {
      this.#seen.push(message);
      for (const listener of this.#listeners) listener();
    });
  }

  static async start(config: ChildConfig): Promise<Child> {
    const child = fork(CHILD_FILE, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, RELOCK_FAIR_CHILD: JSON.stringify(config) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    all.add(child);
    child.once('exit', () => all.delete(child));
    const ready = await new Promise<FromChild & { type: 'ready' }>((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (code, signal) => reject(new Error(`child exited (${code ?? signal}) before it was ready`)));
    });
    return new Child(child, ready.clientId);
  }

  get pid(): number {
    return this.#process.pid!;
  }

  send(message: ToChild): void {
    this.#process.send(message);
  }

  acquire(id: string, options: { waitMs?: number; holdMs?: number; leaseMs?: number } = {}): void {
    this.send({ type: 'acquire', id, ...options });
  }

  /** The first message of that type and id, when it comes (or came). */
  next<T extends FromChild['type']>(type: T, id: string): Promise<FromChild & { type: T }> {
    return new Promise((resolve) => {
      const look = () => {
        const found = this.#seen.find((m) => m.type === type && 'id' in m && m.id === id);
        if (!found) return false;
        this.#listeners.delete(check);
        resolve(found as FromChild & { type: T });
        return true;
      };
      const check = () => void look();
      if (!look()) this.#listeners.add(check);
    });
  }

  messages(): readonly FromChild[] {
    return this.#seen;
  }

  signal(signal: NodeJS.Signals): void {
    this.#process.kill(signal);
  }

  async kill(): Promise<void> {
    if (this.#process.exitCode !== null || this.#process.signalCode !== null) return;
    const exited = new Promise((resolve) => this.#process.once('exit', resolve));
    this.#process.kill('SIGKILL');
    await exited;
  }
}

/** A suite's child processes on its Redis: each resumed (if paused) and killed after the suite. */
export function childProcesses(it: It, redis: () => string): { readonly all: readonly Child[]; start(name: string): Promise<Child> } {
  const all: Child[] = [];
  it.after(async () => {
    for (const child of all) child.signal('SIGCONT');
    await Promise.all(all.map((child) => child.kill()));
  });
  return {
    all,
    async start(name) {
      const child = await Child.start({ redis: redis(), name });
      all.push(child);
      return child;
    },
  };
}

