// The count-down latch's contract (latch-contract.ts) on one private Redis server.
import { fixture } from '../helpers/fixture.ts';
import { latchContract } from './latch-contract.ts';

latchContract('client.countDownLatch() on one server', async () => {
  const f = await fixture();
  return { client: () => f.client(), admins: [f.admin], stop: () => f.close() };
});
