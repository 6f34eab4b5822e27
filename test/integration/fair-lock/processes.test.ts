import * as assert from 'uvu/assert';
import { describe, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { childProcesses } from './processes.ts';
import { keysLeft, queued } from './support.ts';

describe('LockClient#fairLock across processes', (it) => {
  const s = setup(it);
  const children = childProcesses(it, () => s.f.server.url);

  it('serves the waiters of three processes in the order they started waiting, one at a time', async () => {
    const name = uniqueName('fair');
    for (let i = 0; i < 3; i++) await children.start(name);
    const held = await s.client.fairLock(name).acquire();
    // Twelve waiters, interleaved over the processes, each queued before the next starts.
    const order = Array.from({ length: 12 }, (_, i) => ({ child: children.all[(i * 2) % 3]!, id: `w${i}` }));
    for (const [i, { child, id }] of order.entries()) {
      child.acquire(id, { holdMs: 5 });
      await queued(s.f.admin, name, i + 1);
    }
    await held.release();
    const got = await within(
      Promise.all(order.map(async ({ child, id }) => ({ id, acquired: await child.next('acquired', id), released: await child.next('released', id) }))),
      10_000,
      'every waiter served',
    );
    const served = [...got].sort((a, b) => a.acquired.at - b.acquired.at);
    assert.equal(
      served.map((entry) => entry.id),
      order.map((entry) => entry.id),
      'first come, first served',
    );
    for (let i = 1; i < served.length; i++) {
      const early = served[i - 1]!.released.at - served[i]!.acquired.at;
      assert.ok(early <= 0, `${served[i]!.id} held ${early.toFixed(3)} ms before ${served[i - 1]!.id} began to release (tokens ${served[i - 1]!.acquired.token}, ${served[i]!.acquired.token})`);
      assert.ok(served[i]!.acquired.token > served[i - 1]!.acquired.token, 'tokens increase');
    }
    assert.ok(served[0]!.acquired.token > held.fencingToken);
    assert.equal(await keysLeft(s.f.admin, name), []);
  });
});
