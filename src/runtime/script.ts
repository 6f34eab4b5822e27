// Runs Lua scripts and the few plain reads: EVALSHA first, EVAL only when Redis answers NOSCRIPT,
// nothing ever added to the client. Replies get names here (each primitive's decoder), errors get
// a code, and "may this call have been sent twice?" is answered here.
import { LockError } from '../errors.ts';
import type { RedisPort } from '../port/port.ts';

/** A script as scripts/gen-lua.mjs inlines it. */
export interface ScriptSource {
  readonly file: string;
  readonly numberOfKeys: number | null;
  readonly sha1: string;
  readonly source: string;
}

/** A script with the decoder that names its replies, and which of its keys is a pub/sub channel. */
export interface Script<Out> {
  readonly source: ScriptSource;
  readonly decode: (reply: unknown) => Out;
  /** Index (0-based) of the channel among the keys, for error messages. */
  readonly channelKey: number | undefined;
  /**
   * The script counts who received its publication, which only SPUBLISH counts over a whole shard:
   * on a Cluster without sharded pub/sub it is refused (`ERR_LOCK_UNSUPPORTED`).
   */
  readonly countsReceivers?: boolean | undefined;
}

export function defineScript<Out>(source: ScriptSource, decode: (reply: unknown) => Out, channelKey?: number, countsReceivers?: boolean): Script<Out> {
  return { source, decode, channelKey, countsReceivers };
}

/**
 * A script's ARGV, or a function that gives it at each sending: EVALSHA, then EVAL after NOSCRIPT,
 * which goes out after whatever was sent meanwhile (a caller whose ARGV depends on that reads it then).
 */
export type ScriptArgs = readonly (string | number)[] | (() => readonly (string | number)[]);

/**
 * The publish command scripts get in ARGV on a Cluster. On servers without sharded pub/sub (before
 * Redis 7) the runner sends `publish` in its place.
 */
export const SHARDED_PUBLISH = 'spublish';

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A reply error from Redis (the server answered), as opposed to a connection that failed. "max number
 * of clients reached" comes as the reply to a connection's first command, but it is a refused
 * connection (Redis closes it right after): a connection that failed.
 */
export function isReplyError(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError' && !/max number of clients reached/i.test(error.message);
}

/**
 * The error underneath one that says only that the client gave up: ioredis's "Reached the max
 * retries per request limit" comes instead of the connection's own error (ECONNREFUSED, ENOTFOUND),
 * which `lastError` holds.
 */
export function underneath(error: unknown, lastError: Error | undefined): unknown {
  return error instanceof Error && error.name === 'MaxRetriesPerRequestError' ? (lastError ?? error) : error;
}

/**
 * A reply that says the node cannot serve now and ran nothing: a Cluster without a master for the
 * slot (CLUSTERDOWN, as after a failover until the new master is known), a slot being moved
 * (TRYAGAIN), a server still loading its data (LOADING), a replica cut off from its master
 * (MASTERDOWN), or a replica that was the master before a failover (READONLY: a script's first write
 * is refused, so nothing was written). For relock, the master of the key was not reached.
 */
export function isNotServing(error: unknown): boolean {
  return error instanceof Error && error.name === 'ReplyError' && /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY)\b/.test(error.message);
}

/** An ACL refusal, of a command, a key or a channel. */
export function isAclError(error: unknown): boolean {
  return /NOPERM|can't publish to the channel|no permissions/i.test(errorMessage(error));
}

/**
 * A server that runs no Lua: scripting commands renamed away or absent ("unknown command 'evalsha'"),
 * or Valkey 9 with its `lua` engine module unloaded ("Could not find scripting engine 'lua'").
 */
export function isNoScripting(error: unknown): boolean {
  return /unknown command [`'"]?(evalsha|eval)\b|could not find scripting engine/i.test(errorMessage(error));
}

/**
 * Gives a failure its code. A WRONGTYPE means the key space holds something else under relock's keys
 * (scripts check before they write, so nothing changed); an ACL refusal stops a script before any
 * write; anything that is not an answer from Redis means Redis was not reached in time.
 */
export function classify(error: unknown, keys: readonly string[], channel: string | undefined, closed: boolean): unknown {
  if (error instanceof LockError) return error;
  const message = errorMessage(error);
  if (message.includes('FENCEOVERFLOW')) {
    return new LockError(`Fencing token of ${keys.map((key) => `"${key}"`).join(' or ')} would leave the safe integers: ${message}; nothing was changed`, {
      cause: error,
      code: 'ERR_LOCK_FENCE_OVERFLOW',
    });
  }
  if (message.includes('WRONGTYPE')) {
    return new LockError(`Redis key ${keys.map((key) => `"${key}"`).join(' or ')} holds a value that is not relock's (WRONGTYPE); relock left it untouched`, {
      cause: error,
      code: 'ERR_LOCK_WRONG_TYPE',
    });
  }
  if (isNoScripting(error)) {
    return new LockError(`The server runs no Lua scripts (it answered: ${message}): every relock kind needs EVALSHA and EVAL with Lua enabled (on Valkey 9, its lua module loaded); nothing was changed`, {
      cause: error,
      code: 'ERR_LOCK_NO_SCRIPTING',
    });
  }
  if (isAclError(error)) {
    const what = channel && /publish|channel/i.test(message) ? `publish on "${channel}"` : `use ${keys.map((key) => `"${key}"`).join(', ')}`;
    return new LockError(`Not allowed to ${what} (ACL: ${message}): grant the key pattern ~<prefix>:* and the channel pattern &<prefix>:*; nothing was changed`, {
      cause: error,
      code: 'ERR_LOCK_FORBIDDEN',
    });
  }
  if (isReplyError(error) && !isNotServing(error)) return error;
  if (closed) return new LockError('The LockClient was closed', { cause: error, code: 'ERR_LOCK_CLOSED' });
  return new LockError(`Redis could not be reached: ${message}`, { cause: error, code: 'ERR_LOCK_UNREACHABLE' });
}

/** A lock key that holds another type than a lock hash: found by a read (TYPE), nothing was changed. */
export function notALockHash(key: string, type: unknown): LockError {
  return new LockError(`Redis key "${key}" holds a ${String(type)}, not relock's lock hash (WRONGTYPE); relock left it untouched`, { code: 'ERR_LOCK_WRONG_TYPE' });
}

/** Sends scripts and reads over one command connection. */
export class ScriptRunner {
  readonly #port: RedisPort;
  readonly #closed: AbortSignal;
  readonly #cluster: boolean;
  /** On a Cluster: whether its servers have SPUBLISH, once probed. */
  #sharded: boolean | undefined;
  #probe: Promise<boolean> | undefined;
  /** Commands out (sent, not settled). */
  #out = 0;
  /**
   * Since when the server has been silent: the last reply while commands were still out, or the
   * sending of the first command after it went quiet; undefined: nothing is awaited from it.
   */
  #unansweredSince: number | undefined;

  constructor(port: RedisPort, closed: AbortSignal) {
    this.#port = port;
    this.#closed = closed;
    this.#cluster = port.cluster;
    if (!this.#cluster) this.#sharded = false;
  }

  /**
   * Whether releases publish with SPUBLISH (a Cluster of Redis >= 7): asked once per client with
   * COMMAND INFO SPUBLISH, at the first script or subscription; always false on a single server.
   */
  sharded(): Promise<boolean> {
    if (this.#sharded !== undefined) return Promise.resolve(this.#sharded);
    this.#probe ??= this.#port.command('COMMAND', ['INFO', SHARDED_PUBLISH], false).then(
      (reply) => (this.#sharded = Array.isArray(reply) && reply[0] !== null && reply[0] !== undefined),
      (error: unknown) => {
        this.#probe = undefined;
        // An ACL user without +command|info: take the servers for Redis 7 or later.
        if (isAclError(error)) return (this.#sharded = true);
        throw classify(error, [], undefined, this.#closed.aborted);
      },
    );
    return this.#probe;
  }

  /**
   * WAIT on the connection that wrote `key` (on a Cluster: the one to the master of its slot): how
   * many replicas acknowledged every write made on it so far, after at most `timeoutMs`.
   */
  async waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number> {
    try {
      return await this.#port.waitReplicas(key, replicas, timeoutMs);
    } catch (error) {
      throw classify(error, [key], undefined, this.#closed.aborted);
    }
  }

  /** The connection's drop count now: pass it to maybeResent() after the reply. */
  mark(): number {
    return this.#port.drops;
  }

  /** Whether the connection dropped since `mark`: ioredis then resends what was unanswered, so a script may have run twice. */
  maybeResent(mark: number): boolean {
    return this.#port.drops !== mark;
  }

  /** Whether the connection is up now (commands are not queued offline). */
  get ready(): boolean {
    return this.#port.status === 'ready';
  }

  /**
   * Whether a command has been out `ms` or longer with no reply from the server since it was sent: a
   * server whose connection is up but silent (a partition, a frozen process). A command that failed
   * without a reply (a timeout) keeps it silent until the next reply.
   */
  silentFor(ms: number): boolean {
    return this.#unansweredSince !== undefined && performance.now() - this.#unansweredSince >= ms;
  }

  #sent(): void {
    this.#out++;
    this.#unansweredSince ??= performance.now();
  }

  /** After a command's outcome: a reply, or an error the server sent, restarts the silence clock. */
  #heard(error?: unknown): void {
    this.#out--;
    if (error === undefined || (error instanceof Error && error.name === 'ReplyError')) this.#unansweredSince = this.#out > 0 ? performance.now() : undefined;
  }

  /** Why Redis seems unreachable now: the last connection error, or the connection's state. */
  unreachableCause(): Error {
    return this.#port.lastError ?? new Error(`the connection is ${this.#port.status}`);
  }

  async run<Out>(script: Script<Out>, keys: readonly string[], args: ScriptArgs): Promise<Out> {
    const { source } = script;
    if (source.numberOfKeys !== null && keys.length !== source.numberOfKeys) {
      throw new Error(`${source.file} takes ${source.numberOfKeys} keys, got ${keys.length}`);
    }
    // A single server, or a Cluster known to have SPUBLISH, sends the script as it is.
    const unsharded = this.#cluster && this.#sharded !== true && !(await this.sharded());
    const argv = () => {
      const given = typeof args === 'function' ? args() : args;
      return unsharded ? this.#unsharded(script, given) : given;
    };
    const first = argv();
    let reply: unknown;
    this.#sent();
    try {
      try {
        reply = await this.#port.evalsha(source.sha1, keys, first);
      } catch (error) {
        if (!errorMessage(error).includes('NOSCRIPT')) throw error;
        reply = await this.#port.eval(source.source, keys, argv());
      }
      this.#heard();
    } catch (error) {
      this.#heard(error);
      throw classify(underneath(error, this.#port.lastError), keys, script.channelKey === undefined ? undefined : keys[script.channelKey], this.#closed.aborted);
    }
    return script.decode(reply);
  }

  /** The arguments for a Cluster without sharded pub/sub: PUBLISH, which the cluster bus carries everywhere. */
  #unsharded(script: Script<unknown>, args: readonly (string | number)[]): (string | number)[] {
    if (script.countsReceivers) {
      throw new LockError(`${script.source.file} needs sharded pub/sub (SPUBLISH, Redis 7 or later) on a Redis Cluster: PUBLISH counts the receivers of one node only`, {
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    }
    return args.map((arg) => (arg === SHARDED_PUBLISH ? 'publish' : arg));
  }

  /** A plain read, with errors classified as a script's are. */
  async read<T>(command: 'type' | 'pttl' | 'hget', key: string, ...args: string[]): Promise<T> {
    try {
      this.#sent();
      const reply = (await this.#port.command(command, [key, ...args], true)) as T;
      this.#heard();
      return reply;
    } catch (error) {
      this.#heard(error);
      throw classify(underneath(error, this.#port.lastError), [key], undefined, this.#closed.aborted);
    }
  }
}
