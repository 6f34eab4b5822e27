// A process of the job scenarios (job.test.ts): fires one job at every window of a schedule, by its
// own clock (offsetMs late: the clock and timer skew between nodes), and reports each fire to the
// parent. `bare` fires with atLeastMs 0 (the negative control).
import { LockClient } from '../../src/index.ts';

interface Config {
  readonly url: string;
  readonly name: string;
  readonly index: number;
  readonly offsetMs: number;
  readonly periodMs: number;
  readonly windows: number;
  readonly atLeastMs: number;
  readonly atMostMs: number;
  readonly jobMs: number;
  readonly leaseMs: number;
  /** The window whose run lasts 60 s (to be killed mid-run), if any. */
  readonly longWindow?: number;
}

const config = JSON.parse(process.env.RELOCK_JOB_CHILD!) as Config;
const client = new LockClient({ redis: config.url, leaseMs: config.leaseMs });
client.on('warning', () => undefined);
const job = client.job(config.name, { atLeastMs: config.atLeastMs, atMostMs: config.atMostMs });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

process.on('message', (message: { firstAt: number }) => {
  for (let window = 0; window < config.windows; window++) {
    // Each node's timer also fires a few ms apart from run to run.
    const at = message.firstAt + window * config.periodMs + config.offsetMs + Math.random() * 20;
    setTimeout(() => {
      // A run is counted when fn starts (a process killed mid-run ran it); a fire that did not run says why.
      job.run(() => {
        process.send!({ process: config.index, window, ran: true });
        return sleep(window === config.longWindow ? 60_000 : config.jobMs);
      }).then(
        (result) => result.ran || process.send!({ process: config.index, window, ran: false, reason: result.reason }),
        (error: Error) => process.send!({ process: config.index, window, ran: false, reason: `error: ${error.message}` }),
      );
    }, Math.max(0, at - Date.now()));
  }
});
process.send!({ ready: true });
