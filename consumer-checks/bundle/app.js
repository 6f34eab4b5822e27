// A bundled app, the shape of a Lambda handler: ioredis and relock in the bundle, Redis from a URL.
// HAND_IOREDIS=0 leaves out the `ioredis` option (the check expects that to fail in a bundle).
import Redis from 'ioredis';
import { LockClient } from 'relock';

async function main() {
  const client = new LockClient({ redis: process.env.REDIS_URL, ...(process.env.HAND_IOREDIS === '0' ? {} : { ioredis: Redis }) });
  try {
    const lease = await client.lock('bundled').acquire({ waitMs: 1000 });
    const second = await client.lock('bundled').acquire({ waitMs: 50 }).catch((error) => error.code);
    await lease.release();
    console.log(`locked, then ${second}`);
  } finally {
    await client.close();
  }
}

main().catch((error) => {
  console.error(error.message);
  process.exitCode = 1;
});
