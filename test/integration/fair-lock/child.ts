// A fair-lock waiter in its own process, steered by IPC from processes.ts: acquire (with an id),
// hold until told or for holdMs, release. Times are on the clock every process of the machine
// shares (clock.ts).
import { LockClient, type Lease } from '../../../src/index.ts';
import { sharedNow } from './clock.ts';

export interface ChildConfig {
  readonly redis: string;
  readonly name: string;
}

export type ToChild =
  | { readonly type: 'acquire'; readonly id: string; readonly waitMs?: number; readonly holdMs?: number; readonly leaseMs?: number }
  | { readonly type: 'release'; readonly id: string }
  | { readonly type: 'close' };

export type FromChild =
  | { readonly type: 'ready'; readonly clientId: string }
  | { readonly type: 'acquired'; readonly id: string; readonly token: number; readonly at: number }
  | { readonly type: 'released'; readonly id: string; readonly at: number }
  | { readonly type: 'failed'; readonly id: string; readonly message: string };

const config = JSON.parse(process.env.RELOCK_FAIR_CHILD ?? 'null') as ChildConfig | null;
if (config && process.send) {
  const send = (message: FromChild) => process.connected && process.send!(message);
  // An orphan must not outlive the test.
  process.on('disconnect', () => process.exit(1));
  const client = new LockClient({ redis: config.redis });
  client.on('error', () => undefined);
  const lock = client.fairLock(config.name);
  const leases = new Map<string, Lease>();
  const release = async (id: string) => {
    const lease = leases.get(id);
    if (!lease) return;
    leases.delete(id);
    const at = sharedNow();
    await lease.release().catch(() => undefined);
    send({ type: 'released', id, at });
  };
  process.on('message', (message: ToChild) => {
    if (message.type === 'close') void client.close().then(() => process.exit(0));
    if (message.type === 'release') void release(message.id);
    if (message.type !== 'acquire') return;
    const { id, holdMs } = message;
    const options = { ...(message.waitMs === undefined ? {} : { waitMs: message.waitMs }), ...(message.leaseMs === undefined ? {} : { leaseMs: message.leaseMs }) };
    lock.acquire(options).then(
      (lease) => {
        leases.set(id, lease);
        send({ type: 'acquired', id, token: lease.fencingToken, at: sharedNow() });
        if (holdMs !== undefined) setTimeout(() => void release(id), holdMs);
      },
      (error: Error) => send({ type: 'failed', id, message: error.message }),
    );
  });
  send({ type: 'ready', clientId: client.id });
}
