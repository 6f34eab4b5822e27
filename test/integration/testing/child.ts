// Run by start-redis.test.ts in a child process: `node --import tsx child.ts <mode>`.
//   exit: starts a private redis-server, prints its port, and ends without stop(): nothing else
//         keeps it alive, so the process exits by itself
//   find: startRedis() with the default sources; prints the source, or the error's message on stderr
//   hang: starts a private redis-server, prints its port, and stays up until a signal ends it
//   hang-graceful: the same, with a SIGTERM listener of its own that prints "graceful" and exits 0
import { startRedis } from '../../../src/testing/index.ts';

const mode = process.argv[2];
if (mode === 'exit') {
  const redis = await startRedis({ sources: ['redis-server'] });
  console.log(redis.port);
} else if (mode === 'hang' || mode === 'hang-graceful') {
  if (mode === 'hang-graceful') {
    process.on('SIGTERM', () => {
      console.log('graceful');
      setTimeout(() => process.exit(0), 50);
    });
  }
  const redis = await startRedis({ sources: ['redis-server'] });
  setInterval(() => undefined, 1_000);
  console.log(redis.port);
} else if (mode === 'find') {
  try {
    const redis = await startRedis();
    console.log(redis.source);
    await redis.stop();
  } catch (error) {
    console.error((error as Error).message);
    process.exitCode = 1;
  }
} else {
  throw new Error(`unknown mode ${mode}`);
}
