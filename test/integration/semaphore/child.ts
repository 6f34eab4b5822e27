// Semaphore waiters in a process of their own, steered by IPC from processes.test.ts: acquire (an
// id, a name, the limit), release, and report how many acquires of its client are waiting.
import { LockClient, type Lease } from '../../../src/index.ts';

export type ToChild =
  | { readonly type: 'acquire'; readonly id: string; readonly name: string; readonly permits: number }
  | { readonly type: 'release'; readonly id: string }
  | { readonly type: 'waiting' };

export type FromChild =
  | { readonly type: 'ready' }
  | { readonly type: 'acquired'; readonly id: string }
  | { readonly type: 'released'; readonly id: string }
  | { readonly type: 'failed'; readonly id: string; readonly message: string }
  | { readonly type: 'waiting'; readonly count: number };

const redis = process.env.RELOCK_SEM_CHILD;
if (redis && process.send) {
  const send = (message: FromChild) => process.connected && process.send!(message);
  // An orphan must not outlive the test.
  process.on('disconnect', () => process.exit(1));
  const client = new LockClient({ redis });
  client.on('error', () => undefined);
  const leases = new Map<string, Lease>();
  process.on('message', (message: ToChild) => {
    if (message.type === 'waiting') send({ type: 'waiting', count: client.waiting });
    if (message.type === 'release') {
      const lease = leases.get(message.id);
      leases.delete(message.id);
      void lease?.release().then(() => send({ type: 'released', id: message.id }));
    }
    if (message.type !== 'acquire') return;
    const { id } = message;
    client
      .semaphore(message.name, { permits: message.permits })
      .acquire()
      .then(
        (lease) => {
          leases.set(id, lease);
          send({ type: 'acquired', id });
        },
        (error: Error) => send({ type: 'failed', id, message: error.message }),
      );
  });
  send({ type: 'ready' });
}
