// A worker process and the messages between it and the process that forked it: Worker is the
// parent's side, parent() the worker's. Every message is an object with a `type`; a worker that
// fails or exits reaches its parent as an 'error' message. Used by run.ts (lib/worker.ts) and by
// the family's benches (semaphore.ts, rw-lock.ts, redlock.ts), which fork themselves.
import { fork, type ChildProcess } from 'node:child_process';
import type { WriteStream } from 'node:fs';
import { now } from './clock.ts';

export interface Message {
  type: string;
}
type Failure = { type: 'error'; message: string };

export interface WorkerOptions {
  /** Where the worker's stdout and stderr go (libraries' warnings); else to this process's. */
  log?: WriteStream;
  /** Node flags beside `--import tsx`. */
  execArgv?: string[];
}

/** A forked worker (run through tsx) that is sent `To` messages and answers with `From` ones. */
export class Worker<To extends Message, From extends Message> {
  readonly child: ChildProcess;
  readonly #inbox: (From | Failure)[] = [];
  #waiting: ((message: From | Failure) => void) | undefined;
  #exited = false;

  constructor(script: string, args: string[] = [], { log, execArgv = [] }: WorkerOptions = {}) {
    this.child = fork(script, args, {
      execArgv: ['--import', 'tsx', ...execArgv],
      stdio: ['ignore', log ? 'pipe' : 'inherit', log ? 'pipe' : 'inherit', 'ipc'],
    });
    if (log) {
      // Libraries that print (warnings, errors of their own timers) go to the log, not the terminal.
      this.child.stdout?.on('data', (chunk: Buffer) => log.write(chunk));
      this.child.stderr?.on('data', (chunk: Buffer) => log.write(chunk));
    }
    this.child.on('message', (message: From) => this.#receive(message));
    this.child.once('exit', (code, signal) => {
      this.#exited = true;
      this.#receive({ type: 'error', message: `worker exited (${signal ?? code})` });
    });
  }

  #receive(message: From | Failure): void {
    if (this.#waiting) this.#waiting(message);
    else this.#inbox.push(message);
  }

  send(message: To): void {
    if (!this.#exited) this.child.send(message);
  }

  /** The next message, which must be of `type`; a worker error or exit, or the deadline passing, rejects. */
  async expect<T extends From['type']>(type: T, deadline = Number.POSITIVE_INFINITY): Promise<Extract<From, { type: T }>> {
    const message =
      this.#inbox.shift() ??
      (await new Promise<From | Failure>((resolve, reject) => {
        const timer = Number.isFinite(deadline)
          ? setTimeout(() => {
              this.#waiting = undefined;
              reject(new Error(`timed out waiting for '${type}'`));
            }, Math.max(0, deadline - now()))
          : undefined;
        this.#waiting = (received) => {
          clearTimeout(timer);
          this.#waiting = undefined;
          resolve(received);
        };
      }));
    if (message.type === 'error') throw new Error((message as Failure).message);
    if (message.type !== type) throw new Error(`expected '${type}', got '${message.type}'`);
    return message as Extract<From, { type: T }>;
  }

  /** Asks and waits `ms` for the answer of `type` (what came before the question is dropped); undefined when none comes. */
  async ask<T extends From['type']>(question: To, type: T, ms: number): Promise<Extract<From, { type: T }> | undefined> {
    if (this.#exited) return undefined;
    this.#inbox.length = 0;
    this.send(question);
    try {
      return await this.expect(type, now() + ms);
    } catch {
      return undefined;
    }
  }

  /** Sends `{ type: 'close' }` and waits for the worker to exit; one still there after 8 s is killed. */
  async close(): Promise<void> {
    if (this.#exited) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.send({ type: 'close' } as To);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 8_000);
    await exited;
    clearTimeout(timer);
  }

  kill(): void {
    if (!this.#exited) this.child.kill('SIGKILL');
  }
}

/** In a worker: messages to its parent, and the parent's next message of one of some types (others are left to other listeners). */
export function parent<To extends Message, From extends Message>() {
  return {
    /** Resolves once the message is handed to the channel (before exiting, say). */
    send: (message: From) => new Promise<void>((resolve) => void (process.send?.(message, () => resolve()) ?? resolve())),
    next: <T extends To['type']>(...types: T[]): Promise<Extract<To, { type: T }>> =>
      new Promise((resolve) => {
        const listener = (message: To) => {
          if (!types.includes(message.type as T)) return;
          process.off('message', listener);
          resolve(message as Extract<To, { type: T }>);
        };
        process.on('message', listener);
      }),
  };
}
