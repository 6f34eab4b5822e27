// The waiting room's collaborator in memory (not Redis): subscribe/unsubscribe with one reference per
// waiter, as the real Subscriber counts them.
import type { Subscriber } from '../../src/runtime/subscriber.ts';
import { WaitingRoom } from '../../src/runtime/waiting.ts';

export class FakeSubscriber {
  readonly refs = new Map<string, number>();
  readonly calls: string[] = [];
  /** Channels whose next subscribe fails with this error. */
  readonly failing = new Map<string, Error>();

  async subscribe(channel: string): Promise<void> {
    this.calls.push(`subscribe ${channel}`);
    await Promise.resolve();
    const error = this.failing.get(channel);
    if (error) {
      this.failing.delete(channel);
      throw error;
    }
    this.refs.set(channel, (this.refs.get(channel) ?? 0) + 1);
  }

  unsubscribe(channel: string): void {
    this.calls.push(`unsubscribe ${channel}`);
    const refs = (this.refs.get(channel) ?? 0) - 1;
    if (refs < 0) throw new Error(`unsubscribe of ${channel} without a reference`);
    if (refs === 0) this.refs.delete(channel);
    else this.refs.set(channel, refs);
  }
}

/** A waiting room over a FakeSubscriber. */
export function fakeRoom(clientId = 'client-1'): { subscriber: FakeSubscriber; waiting: WaitingRoom } {
  const subscriber = new FakeSubscriber();
  const waiting = new WaitingRoom(clientId);
  waiting.attach(subscriber as unknown as Subscriber);
  return { subscriber, waiting };
}
