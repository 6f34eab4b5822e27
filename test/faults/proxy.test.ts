// The TCP proxy the partition and latency scenarios rely on: it passes, delays, black-holes (and
// heals) and cuts, against a real Redis.
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { describe, within } from '../helpers/describe.ts';
import { startProxy, type Proxy } from '../helpers/proxy.ts';
import { startPrivateRedis, type RedisServer } from '../helpers/redis.ts';

describe('faults: TCP proxy helper', (it) => {
  let server: RedisServer;
  let proxy: Proxy;
  let redis: Redis;

  it.before(async () => {
    server = await startPrivateRedis({ private: true });
    proxy = await startProxy({ host: server.host, port: server.port });
    redis = new Redis({ ...proxy.options, retryStrategy: () => 20 });
    redis.on('error', () => undefined);
  });
  it.after(async () => {
    redis.disconnect();
    await proxy.close();
    await server.stop();
  });

  it('passes commands through', async () => {
    assert.is(await redis.ping(), 'PONG');
    assert.is(proxy.connections, 1);
  });

  it('delays each direction, keeping the order of the bytes', async () => {
    proxy.delay({ minMs: 20, maxMs: 50 });
    const started = performance.now();
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => redis.echo(String(i))));
    const ms = performance.now() - started;
    proxy.pass();
    assert.equal(replies, Array.from({ length: 20 }, (_, i) => String(i)));
    assert.ok(ms >= 40, `a round trip took ${Math.round(ms)} ms with 20-50 ms each way`);
  });

  it('black-holes traffic until pass(), then delivers what it held', async () => {
    proxy.blackhole();
    let answered = false;
    const ping = redis.ping().then((reply) => ((answered = true), reply));
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.is(answered, false, 'nothing gets through a black hole');
    proxy.pass();
    assert.is(await within(ping, 2_000, 'the PING held by the black hole'), 'PONG');
  });

  it('cuts connections; the client reconnects through it', async () => {
    const closed = new Promise((resolve) => redis.once('close', resolve));
    proxy.cut();
    await within(closed, 2_000, 'the client sees its connection close');
    assert.is(await within(redis.ping(), 5_000, 'a PING after the reconnect'), 'PONG');
  });
});
