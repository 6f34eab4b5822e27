// A process of the node-cron scenario (node-cron.test.ts): a real node-cron task fired every second,
// `distributed` over relock's runCoordinator (or, as the negative control, a coordinator that lets
// every process run); reports each run's fire time (whole seconds) to the parent.
import cron from 'node-cron';
import { LockClient } from '../../src/index.ts';
import { runCoordinator } from '../../src/node-cron/index.ts';

const { url, index, bare } = JSON.parse(process.env.RELOCK_CRON_CHILD!) as { url: string; index: number; bare: boolean };
const client = new LockClient({ redis: url, leaseMs: 1_000 });
client.on('warning', () => undefined);
const coordinator = bare ? { shouldRun: () => true } : runCoordinator(client, { atLeastMs: 5_000 });

process.on('message', (message: { name: string }) => {
  const task = cron.schedule(
    '* * * * * *',
    async (context) => {
      process.send!({ process: index, window: Math.round(context.date.getTime() / 1000), ran: true });
      await new Promise((resolve) => setTimeout(resolve, 10));
    },
    { name: message.name, distributed: true, runCoordinator: coordinator },
  );
  task.on('execution:skipped', (context) => {
    process.send!({ process: index, window: Math.round(context.date.getTime() / 1000), ran: false, reason: String(context.reason) });
  });
});
process.send!({ ready: true });
