import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { LockClient } from '../../../src/index.ts';
import { createRelockUser } from '../../helpers/acl.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

describe('ReadWriteLock under a least-privilege ACL user', (it) => {
  const s = setup(it);

  it('works with only the commands its scripts call, the keys ~relock:* and the channels &relock:*', async () => {
    const user = await createRelockUser(s.f.admin, 'rw-user');
    const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, ...user.options });
    const client = new LockClient({ redis });
    try {
      const rw = client.readWriteLock(uniqueName('rw'));
      const writer = await rw.writeLock().acquire();
      const read = await writer.run(() => rw.readLock().acquire());
      const waiting = s.client.readWriteLock(rw.name).writeLock().acquire();
      await eventually(() => s.client.waiting === 1, 'a writer of another client waits');
      const reading = client.readWriteLock(rw.name).readLock().acquire(); // another context: behind the write hold
      await eventually(() => client.waiting === 1, 'a reader waits');
      await writer.release(); // a read batch: RENAME, PEXPIRE, two PUBLISH
      await (await within(reading, 2_000, 'the reader after the write release')).release();
      assert.ok(await rw.readLock().isLocked());
      await read.release();
      await (await within(waiting, 2_000, 'the writer after the readers')).release();
      assert.is(await rw.writeLock().forceUnlock(), false);
      assert.is((await rejects(rw.readLock().runExclusive(() => rw.writeLock().acquire()))).code, 'ERR_LOCK_UPGRADE');
    } finally {
      await client.close();
      redis.disconnect();
    }
  });
});
