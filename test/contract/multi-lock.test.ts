import { lockContract } from './lock-contract.ts';

// Two members given in the reverse of their name order (the multi-lock sorts them), on one client.
// The whole contract applies: nothing is skipped.
lockContract('client.multiLock()', (client, name) => client.multiLock([client.lock(`${name}:b`), client.lock(`${name}:a`)]), {
  expectedName: (name) => `${name}:b,${name}:a`,
});
