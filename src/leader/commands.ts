// Typed wrappers of the election's scripts (lua/leader/), and the messages of its channel: every
// reply and message gets a name here. A term ends through the lock's own release script.
import type { LeaderInfo } from '../api.ts';
import * as lua from '../generated/leader.ts';
import { release, toToken } from '../lock/commands.ts';
import type { TakeOutcome } from '../runtime/attempt.ts';
import type { ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import type { LeaderKeys } from './keys.ts';

/** What a campaign's attempt got: elected, with its epoch (the token) and its start; or busy. */
export type CampaignOutcome = (TakeOutcome & { readonly kind: 'busy' }) | { readonly kind: 'acquired'; readonly token: number; readonly since: number };

/** An election read at one moment: its leader and the lease left of the term, or nobody since the epoch `last`. */
export type Inspection = { readonly kind: 'leading'; readonly leader: LeaderInfo; readonly pttlMs: number } | { readonly kind: 'vacant'; readonly last: number };

/** A message of the election's channel: a term began, or one was given up (`epoch` undefined: unknown). */
export type Change = { readonly kind: 'elected'; readonly leader: LeaderInfo } | { readonly kind: 'resigned'; readonly epoch: number | undefined };

const campaign = defineScript(lua.campaign, (reply) => reply as number | string, 2);
const inspect = defineScript(lua.inspect, (reply) => reply as [string | null, string | null, (string | null)?, number?]);

/** Names a message of the election's channel; undefined for anything else. */
export function parseChange(message: string): Change | undefined {
  if (message.startsWith('resigned:')) {
    const epoch = Number(message.slice('resigned:'.length));
    return { kind: 'resigned', epoch: Number.isSafeInteger(epoch) && epoch > 0 ? epoch : undefined };
  }
  const match = /^elected:(\d+):(\d+):([\s\S]*)$/.exec(message);
  return match ? { kind: 'elected', leader: { epoch: Number(match[1]), since: Number(match[2]), candidate: match[3]! } } : undefined;
}

export class LeaderCommands {
  readonly #runner: ScriptRunner;
  readonly #publish: string;
  readonly #leaseMs: number;

  /** `leaseMs`: the client's (a key without expiry is tried again after it). */
  constructor(runner: ScriptRunner, publish: string, leaseMs: number) {
    this.#runner = runner;
    this.#publish = publish;
    this.#leaseMs = leaseMs;
  }

  /** One attempt to lead for `owner`; busy says when the term's lease ends. The epoch key never expires. */
  async campaign(keys: LeaderKeys, owner: string, candidate: string, leaseMs: number): Promise<CampaignOutcome> {
    const reply = await this.#runner.run(campaign, [keys.lock, keys.fence, keys.channel], [owner, leaseMs, candidate, this.#publish]);
    if (typeof reply === 'number' && reply < 0) return { kind: 'busy', retryMs: reply === -1 ? this.#leaseMs : -2 - reply + 1 };
    const [epoch, since] = String(reply).split(':');
    return { kind: 'acquired', token: toToken(epoch, keys.fence), since: Number(since) };
  }

  /** Ends `owner`'s term (the lock's release script) and tells the observers which one ended. */
  resign(keys: LeaderKeys, owner: string, epoch: number): Promise<ReleaseOutcome> {
    return this.#runner.run(release, [keys.lock, keys.channel], [owner, 1, 1, this.#publish, `resigned:${epoch > 0 ? epoch : ''}`]);
  }

  async inspect(keys: LeaderKeys): Promise<Inspection> {
    const [candidate, epoch, since, pttl] = await this.#runner.run(inspect, [keys.lock, keys.fence], []);
    if (candidate === null || candidate === undefined) return { kind: 'vacant', last: Number(epoch ?? 0) };
    return { kind: 'leading', leader: { candidate: String(candidate), epoch: Number(epoch), since: Number(since) }, pttlMs: Number(pttl) };
  }
}
