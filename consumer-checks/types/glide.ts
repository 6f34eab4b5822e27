// A project with GLIDE and neither ioredis nor node-redis.
import { GlideClient } from '@valkey/valkey-glide';
import { LockClient, type Lease } from 'relock';

export async function lockOnce(): Promise<Lease> {
  const redis = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: 6390 }] });
  const client = new LockClient({ redis });
  // @ts-expect-error -- a string is no lease duration
  void client.lock('job').acquire({ leaseMs: '10s' });
  return client.lock('job').acquire({ waitMs: 1_000 });
}
