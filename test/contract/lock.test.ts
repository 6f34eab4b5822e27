import { lockContract } from './lock-contract.ts';

lockContract('client.lock()', (client, name) => client.lock(name));
