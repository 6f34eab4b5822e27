// Fault 4: Redis is restarted (SHUTDOWN NOSAVE, then started again on the same port) while a lock
// is held and waited for. Every worker reconnects and finishes; the holder learns its lease is lost.
// Down for longer than the lease, the holder learns it before the new Redis hands the lock to anyone.
// Back within the lease (a quick restart: the lock state is simply gone), the holder learns it at
// its next renewal, possibly after another holder began: that window is reported, and it is why
// guarantees.md asks for persistence and fencing tokens.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import type { Entry } from './protocol.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 1_000;
const restarts = sized(1, 3);

describe('faults: Redis restarted while locks are held and waited for', (it) => {
  it(
    'reconnects every worker, and tells the holder its lease is lost',
    async () => {
      const slow: Entry[] = [];
      const quick: Entry[] = [];
      const { report } = await scenario(
        { name: 'Redis restart (SHUTDOWN NOSAVE)', leaseMs, limitMs: 30_000 + restarts * 30_000 },
        async (run) => {
          await run.sleep(300);
          for (let i = 0; i < restarts; i++) {
            slow.push((await run.restartWhileHeld(Math.round(1.5 * leaseMs))).lost);
            await run.sleep(300);
            quick.push((await run.restartWhileHeld(0)).lost);
            await run.sleep(300);
          }
          const lag = quick.map((e) => e.lostAt! - e.start);
          run.notes.push(`quick restart: holder learnt its loss ${Math.round(Math.max(...lag))} ms after acquiring at most`);
        },
      );
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      for (const section of [...slow, ...quick]) {
        assert.is(section.lostCode, 'ERR_LOCK_LOST', `the holder learns its lease is lost (${JSON.stringify(section)})`);
        assert.is(section.write, 'none', 'the holder stops writing once its signal aborted');
      }
      // Back at once: the lock state is gone, so the release finds nothing. Still down: the release
      // fails fast with ERR_LOCK_UNREACHABLE (relock's connections do not queue for 20 retries).
      for (const section of quick) assert.is(section.release, 'ERR_LOCK_NOT_HELD', 'its release() rejects with LockNotHeldError');
      for (const section of slow) assert.ok(['ERR_LOCK_NOT_HELD', 'ERR_LOCK_UNREACHABLE'].includes(section.release!), `release: ${section.release}`);
    },
    60_000 + restarts * 30_000,
  );
});
