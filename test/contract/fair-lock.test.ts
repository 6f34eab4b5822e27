import { lockContract } from './lock-contract.ts';

// A fair waiter's client heartbeats its queue entries every 200 ms: at most 3 script calls in the
// contract's 500 ms of sleep, whatever the number of waiters (one call per client and lock).
lockContract('client.fairLock()', (client, name) => client.fairLock(name), { idleWaitCalls: 3 });
