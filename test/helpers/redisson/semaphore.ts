// RPermitExpirableSemaphore of the Redisson stand-in: permits with leases, ids of 16 random bytes
// stored raw and shown as 32 hex characters; waiters woken by the counts published on
// redisson_sc:{<name>}, or at the nearest expiry of a held permit.
import type { StandInContext } from './context.ts';
import { prefixName, randomId, suffixName } from './names.ts';
import { NON_EXPIRABLE, PERMIT_ACQUIRE, PERMIT_AVAILABLE, PERMIT_RELEASE, PERMIT_TRY_SET } from './semaphore-scripts.ts';
import { acquireWaiting, type Attempt } from './waiting.ts';

export interface PermitOptions {
  /** The permit's lease in ms; without it the permit never expires. */
  readonly leaseMs?: number;
}

export interface TryAcquireOptions extends PermitOptions {
  /** How long to wait in ms; without it, one attempt. */
  readonly waitMs?: number;
}

export class PermitSemaphoreStandIn {
  readonly name: string;
  readonly #ctx: StandInContext;

  constructor(ctx: StandInContext, name: string) {
    this.#ctx = ctx;
    this.name = name;
  }

  get timeoutKey(): string {
    return suffixName(this.name, 'timeout');
  }

  get channel(): string {
    return prefixName('redisson_sc', this.name);
  }

  /** Sets the permits when the semaphore does not exist yet. */
  async trySetPermits(permits: number): Promise<boolean> {
    return (await this.#ctx.redis.eval(PERMIT_TRY_SET, [this.name, this.channel], [permits, this.#ctx.redis.publishCommand])) === 1;
  }

  /** acquire(leaseTime): waits without limit; the permit id in hex. */
  async acquire(options: PermitOptions = {}): Promise<string> {
    return (await this.#wait(undefined, options.leaseMs))!;
  }

  /** tryAcquire(): one attempt; with waitMs, tryAcquire(waitTime, leaseTime). The id, or null. */
  async tryAcquire(options: TryAcquireOptions = {}): Promise<string | null> {
    if (options.waitMs !== undefined) return this.#wait(options.waitMs, options.leaseMs);
    const result = await this.#attempt(options.leaseMs);
    return result.taken ? result.value : null;
  }

  /** Gives a permit back; throws when it was released already, is unknown, or had expired. */
  async release(permitId: string): Promise<void> {
    if (!(await this.tryRelease(permitId))) throw new Error(`Permit with id ${permitId} has already been released or doesn't exist`);
  }

  async tryRelease(permitId: string): Promise<boolean> {
    const keys = [this.name, this.channel, this.timeoutKey];
    const args = [Buffer.from(permitId, 'hex'), 1, Date.now(), this.#ctx.redis.publishCommand];
    return (await this.#ctx.redis.eval(PERMIT_RELEASE, keys, args)) === 1;
  }

  async availablePermits(): Promise<number> {
    const keys = [this.name, this.timeoutKey, this.channel];
    return Number(await this.#ctx.redis.eval(PERMIT_AVAILABLE, keys, [Date.now(), this.#ctx.redis.publishCommand]));
  }

  #wait(waitMs: number | undefined, leaseMs: number | undefined): Promise<string | null> {
    return acquireWaiting(this.#ctx, { attempt: () => this.#attempt(leaseMs), channel: this.channel, kind: 'semaphore', waitMs });
  }

  /** One acquisition with a fresh id; not taken: wait for a message, or until the nearest expiry. */
  async #attempt(leaseMs: number | undefined): Promise<Attempt<string>> {
    const id = randomId();
    const expiresAt = leaseMs === undefined ? NON_EXPIRABLE : Date.now() + leaseMs;
    const keys = [this.name, this.timeoutKey, this.channel];
    const args = [1, expiresAt, Date.now(), NON_EXPIRABLE, this.#ctx.redis.publishCommand, id];
    const reply = (await this.#ctx.redis.eval(PERMIT_ACQUIRE, keys, args)) as string | null;
    if (reply === 'OK') return { taken: true, value: id.toString('hex') };
    if (reply === null) return { taken: false, ttlMs: null };
    return { taken: false, ttlMs: Math.max(0, Number(reply.slice(1)) - Date.now()) };
  }
}
