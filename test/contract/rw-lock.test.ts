import { lockContract } from './lock-contract.ts';

// The write side is a Lock like client.lock(): the whole contract applies.
lockContract('client.readWriteLock().writeLock()', (client, name) => client.readWriteLock(name).writeLock());

// Readers share by design, so the tests of two holders of one kind excluding each other cannot
// apply to the read side; the waiting tests (timeout, abort, wake-up, resubscribe, crashed holder,
// close, forceUnlock) run with the write side of the same name as the holder that keeps it out.
lockContract('client.readWriteLock().readLock()', (client, name) => client.readWriteLock(name).readLock(), {
  blocker: (client, name) => client.readWriteLock(name).writeLock(),
});
