// relock with a subscriber on every diagnostics channel it publishes on (no-op handlers): beside
// relock without any, the price of turning diagnostics on. Without subscribers relock only reads
// `hasSubscribers`; with them it builds each context or message and publishes it.
import { channel, tracingChannel, type TracingChannelSubscribers } from 'node:diagnostics_channel';
import { bundle, relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

const noop = (): void => undefined;
const tracing: TracingChannelSubscribers<object> = { start: noop, end: noop, asyncStart: noop, asyncEnd: noop, error: noop };

/** Kept for the life of the process: a channel without a strong reference may be collected with its subscribers. */
export const subscribed = {
  acquire: tracingChannel('relock:acquire'),
  release: tracingChannel('relock:release'),
  lost: channel('relock:lost'),
  renew: channel('relock:renew'),
  wake: channel('relock:wake'),
};
subscribed.acquire.subscribe(tracing);
subscribed.release.subscribe(tracing);
for (const plain of [subscribed.lost, subscribed.renew, subscribed.wake]) plain.subscribe(noop);

export const create: Create = relockAdapter(bundle);
