import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockError } from '../../src/errors.ts';
import { ioredisPort, watchConnection, type RedisClient } from '../../src/port/ioredis.ts';
import { classify, defineScript, ScriptRunner, type ScriptSource } from '../../src/runtime/script.ts';
import { describe, eventually, rejects, uniqueName, within } from '../helpers/describe.ts';
import { commandStats, sleep } from '../helpers/fixture.ts';
import { freePort, startPrivateRedis, type RedisServer } from '../helpers/redis.ts';

function source(file: string, body: string, numberOfKeys: number | null): ScriptSource {
  return { file, numberOfKeys, sha1: createHash('sha1').update(body).digest('hex'), source: body };
}

const echo = defineScript(source('echo-1.lua', 'return {KEYS[1], ARGV[1], ARGV[2]}', 1), (reply) => {
  const [key, first, second] = reply as string[];
  return { kind: 'echoed' as const, key, first, second };
});
const countKeys = defineScript(source('count-n.lua', 'return #KEYS', null), (reply) => Number(reply));
const get = defineScript(source('get-1.lua', "return redis.call('GET', KEYS[1])", 1), (reply) => reply);
const incr = defineScript(source('incr-1.lua', "return redis.call('INCR', KEYS[1])", 1), (reply) => Number(reply));
const publish = defineScript(source('publish-2.lua', "return redis.call('PUBLISH', KEYS[2], ARGV[1])", 2), (reply) => reply, 1);
const refuse = defineScript(source('refuse-0.lua', "return redis.error_reply('MYERR refused on purpose')", 0), (reply) => reply);

const runners = (redis: Redis, closed = new AbortController().signal) => new ScriptRunner(ioredisPort(redis as unknown as RedisClient, false, () => undefined), closed);

describe('ScriptRunner#run', (it) => {
  let server: RedisServer;
  let admin: Redis;
  let redis: Redis;
  it.before(async () => {
    server = await startPrivateRedis();
    admin = server.connect();
    redis = server.connect();
  });
  it.after(() => server.stop());

  it('sends EVALSHA, and EVAL once when Redis answers NOSCRIPT (after SCRIPT FLUSH)', async () => {
    const runner = runners(redis);
    await admin.script('FLUSH');
    await admin.config('RESETSTAT');
    const out = await runner.run(echo, ['k'], ['a', 7]);
    assert.equal(out, { kind: 'echoed', key: 'k', first: 'a', second: '7' });
    let stats = await commandStats(admin);
    assert.is(stats.evalsha, 1);
    assert.is(stats.eval, 1, 'NOSCRIPT: loaded by EVAL');
    await runner.run(echo, ['k'], ['b', 8]);
    stats = await commandStats(admin);
    assert.is(stats.evalsha, 2);
    assert.is(stats.eval, 1, 'then EVALSHA only');
  });

  it('never loads scripts into the client (no defineCommand, no SCRIPT LOAD)', async () => {
    const runner = runners(redis);
    await admin.config('RESETSTAT');
    await runner.run(echo, ['k'], ['a', 1]);
    const stats = await commandStats(admin);
    assert.is(stats.script, undefined);
    assert.equal((redis as unknown as { scriptsSet: object }).scriptsSet, {}, 'no command defined on the client');
  });

  it('refuses a call with the wrong number of keys before any I/O', async () => {
    const runner = runners(redis);
    await admin.config('RESETSTAT');
    const error = await rejects(runner.run(echo, ['k', 'extra'], ['a', 1]));
    assert.instance(error, Error);
    assert.match(error.message, 'echo-1.lua takes 1 keys, got 2');
    assert.is(await rejects(runner.run(echo, [], [])).then((e) => e.message), 'echo-1.lua takes 1 keys, got 0');
    const stats = await commandStats(admin);
    assert.is(stats.evalsha, undefined);
    assert.is(stats.eval, undefined);
  });

  it('takes any number of keys for a script whose count is n', async () => {
    const runner = runners(redis);
    assert.is(await runner.run(countKeys, [], []), 0);
    assert.is(await runner.run(countKeys, ['a', 'b', 'c'], []), 3);
  });

  it('passes a reply error of the script through as it is', async () => {
    const runner = runners(redis);
    await rejects(runner.run(refuse, [], [])); // loaded (EVAL caches a script that fails at run time too)
    await admin.config('RESETSTAT');
    const error = await rejects(runner.run(refuse, [], []));
    assert.not.instance(error, LockError);
    assert.is(error.name, 'ReplyError');
    assert.match(error.message, 'MYERR refused on purpose');
    const stats = await commandStats(admin);
    assert.is(stats.eval, undefined, 'an error other than NOSCRIPT sends no EVAL');
  });

  it('passes through a reply error of the EVAL that followed NOSCRIPT', async () => {
    const runner = runners(redis);
    await admin.script('FLUSH');
    const error = await rejects(runner.run(refuse, [], []));
    assert.is(error.name, 'ReplyError');
    assert.match(error.message, 'MYERR');
  });

  it('gives WRONGTYPE the code ERR_LOCK_WRONG_TYPE, naming the keys, with the Redis error as cause', async () => {
    const runner = runners(redis);
    const key = uniqueName('hash');
    await admin.hset(key, 'field', '1');
    const error = await rejects(runner.run(get, [key], []));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_WRONG_TYPE');
    assert.ok(error.message.includes(`"${key}"`), error.message);
    assert.match(String(error.cause?.message), 'WRONGTYPE');
    assert.is(await admin.hget(key, 'field'), '1');
  });

  it('passes through another error raised inside the script (not an integer)', async () => {
    const runner = runners(redis);
    const key = uniqueName('string');
    await admin.set(key, 'not a number');
    const error = await rejects(runner.run(incr, [key], []));
    assert.not.instance(error, LockError);
    assert.is(error.name, 'ReplyError');
    assert.match(error.message, /not an integer/);
  });

  it('decodes replies with the script decoder', async () => {
    const runner = runners(redis);
    const key = uniqueName('counter');
    assert.is(await runner.run(incr, [key], []), 1);
    assert.is(await runner.run(incr, [key], []), 2);
  });
});

describe('ScriptRunner ACL refusals', (it) => {
  let server: RedisServer;
  let admin: Redis;
  let limited: Redis;
  it.before(async () => {
    server = await startPrivateRedis();
    admin = server.connect();
    // Keys under allowed:* and chan:*, channels only under allowed:*: a channel passed as a key (as
    // relock's scripts do) passes the key check of EVALSHA and is refused by PUBLISH inside.
    await admin.call('ACL', 'SETUSER', 'limited', 'reset', 'on', '>pw', '~allowed:*', '~chan:*', '&allowed:*', '+@all');
    limited = new Redis({ host: server.host, port: server.port, username: 'limited', password: 'pw', enableReadyCheck: false });
    limited.on('error', () => undefined);
  });
  it.after(async () => {
    limited.disconnect();
    await server.stop();
  });

  it('gives NOPERM on a key the code ERR_LOCK_FORBIDDEN, naming the keys', async () => {
    const runner = runners(limited);
    const error = await rejects(runner.run(get, ['forbidden:1'], []));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_FORBIDDEN');
    assert.ok(error.message.includes('"forbidden:1"'), error.message);
    assert.ok(error.cause instanceof Error);
    assert.is(await runner.run(get, ['allowed:1'], []), null, 'an allowed key works');
  });

  it("gives a refused PUBLISH the code ERR_LOCK_FORBIDDEN, naming the script's channel", async () => {
    const runner = runners(limited);
    const error = await rejects(runner.run(publish, ['allowed:1', 'chan:forbidden'], ['message']));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_FORBIDDEN');
    assert.ok(error.message.includes('publish on "chan:forbidden"'), error.message);
  });

  it('classifies a refused plain read as ERR_LOCK_FORBIDDEN too', async () => {
    const runner = runners(limited);
    const error = await rejects(runner.read('pttl', 'forbidden:2'));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_FORBIDDEN');
  });
});

describe('ScriptRunner unreachable and closed', (it) => {
  let nowhere: Redis;
  it.before(async () => {
    // A port nobody listens on, and no reconnection: every command fails at once.
    nowhere = new Redis({ port: await freePort(), lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false });
    nowhere.on('error', () => undefined);
  });
  it.after(() => nowhere.disconnect());

  it('gives a connection failure the code ERR_LOCK_UNREACHABLE, with the connection error as cause', async () => {
    const runner = runners(nowhere);
    const error = await rejects(runner.run(echo, ['k'], ['a', 1]));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
    assert.match(error.message, /^Redis could not be reached: /);
    assert.instance(error.cause, Error);
    assert.not.ok(runner.ready);
  });

  it('gives a connection refused with "max number of clients reached" the code ERR_LOCK_UNREACHABLE, not a reply error', async () => {
    const full = await startPrivateRedis();
    const admin = full.connect();
    try {
      await admin.config('SET', 'maxclients', '1'); // the admin connection is the one client
      const late = new Redis({ port: full.port, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableReadyCheck: false, disableClientInfo: true });
      late.on('error', () => undefined);
      try {
        const error = await rejects(runners(late).run(echo, ['k'], ['a', 1]));
        assert.is(error.code, 'ERR_LOCK_UNREACHABLE', error.message);
        assert.match(error.message, /max number of clients reached/);
      } finally {
        late.disconnect();
      }
    } finally {
      admin.disconnect();
      await full.stop();
    }
  });

  it('gives a failure after the client closed the code ERR_LOCK_CLOSED', async () => {
    const closer = new AbortController();
    const runner = runners(nowhere, closer.signal);
    closer.abort(new Error('closed'));
    const error = await rejects(runner.run(echo, ['k'], ['a', 1]));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_CLOSED');
    const read = await rejects(runner.read('type', 'k'));
    assert.is(read.code, 'ERR_LOCK_CLOSED');
  });

  it('explains the unreachable state by the last connection error, else by the connection status', () => {
    const runner = runners(nowhere);
    const watch = watchConnection(nowhere as unknown as RedisClient);
    const saved = watch.lastError;
    try {
      watch.lastError = undefined;
      assert.match(runner.unreachableCause().message, /the connection is /);
      watch.lastError = new Error('ECONNREFUSED 127.0.0.1:1');
      assert.is(runner.unreachableCause(), watch.lastError);
    } finally {
      watch.lastError = saved;
    }
  });
});

describe('classify', (it) => {
  const replyError = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

  it('leaves a LockError as it is', () => {
    const error = new LockError('mine', { code: 'ERR_LOCK_TIMEOUT' as never });
    assert.is(classify(error, ['k'], undefined, false), error);
    assert.is(classify(error, ['k'], undefined, true), error);
  });

  it('names the codes: WRONGTYPE, NOPERM, a reply error, closed, unreachable', () => {
    const code = (error: unknown, closed = false) => {
      const out = classify(error, ['k1', 'k2'], 'chan', closed);
      return out instanceof LockError ? out.code : out === error ? 'same' : 'other';
    };
    assert.is(code(replyError('WRONGTYPE Operation against a key holding the wrong kind of value')), 'ERR_LOCK_WRONG_TYPE');
    assert.is(code(replyError('NOPERM this user has no permissions to access one of the keys used as arguments')), 'ERR_LOCK_FORBIDDEN');
    assert.is(code(replyError("ERR The user executing the script can't publish to the channel mentioned in the command")), 'ERR_LOCK_FORBIDDEN');
    assert.is(code(replyError('ERR value is not an integer or out of range')), 'same');
    assert.is(code(replyError('ERR value is not an integer or out of range'), true), 'same', 'a reply is a reply, even after close');
    assert.is(code(new Error('Connection is closed.')), 'ERR_LOCK_UNREACHABLE');
    assert.is(code(new Error('Connection is closed.'), true), 'ERR_LOCK_CLOSED');
    assert.is(code('a string thrown'), 'ERR_LOCK_UNREACHABLE');
  });

  it('keeps the original error as the cause', () => {
    const error = replyError('WRONGTYPE x');
    assert.is((classify(error, ['k'], undefined, false) as LockError).cause, error);
  });
});

describe('ScriptRunner#mark and #maybeResent', (it) => {
  let server: RedisServer;
  let admin: Redis;
  it.before(async () => {
    server = await startPrivateRedis();
    admin = server.connect();
  });
  it.after(() => server.stop());

  const clientId = async (redis: Redis) => Number(await redis.client('ID'));

  it('says "may have been resent" only after the connection dropped since the mark', async () => {
    const redis = server.connect();
    await redis.ping();
    const runner = runners(redis);
    const mark = runner.mark();
    await runner.run(echo, ['k'], ['a', 1]);
    assert.not.ok(runner.maybeResent(mark), 'no drop: sent once');
    await admin.client('KILL', 'ID', String(await clientId(redis)));
    await eventually(() => runner.maybeResent(mark), 'the drop is seen', 3_000);
    await eventually(() => redis.status === 'ready', 'reconnected', 3_000);
    assert.ok(runner.ready);
    const after = runner.mark();
    await runner.run(echo, ['k'], ['b', 2]);
    assert.not.ok(runner.maybeResent(after), 'a mark taken after the drop is clean');
    redis.disconnect();
  });

  it('is shared by every runner on one connection, with one close listener', async () => {
    const redis = server.connect();
    await redis.ping();
    const before = redis.listenerCount('close');
    const first = runners(redis);
    const second = runners(redis);
    assert.is(redis.listenerCount('close'), before + 1);
    const mark = second.mark();
    assert.is(first.mark(), mark);
    await admin.client('KILL', 'ID', String(await clientId(redis)));
    await eventually(() => first.maybeResent(mark) && second.maybeResent(mark), 'both see the drop', 3_000);
    redis.disconnect();
  });

  it('answers true for a script that was out when the connection dropped (ioredis resends it: it may run twice)', async () => {
    const redis = server.connect();
    await redis.ping();
    const runner = runners(redis);
    const key = uniqueName('twice');
    const pid = Number((await admin.info('server')).match(/process_id:(\d+)/)![1]);
    process.kill(pid, 'SIGSTOP');
    let running: Promise<number>;
    const mark = runner.mark();
    try {
      running = runner.run(incr, [key], []);
      await sleep(50); // the command is in the server's socket buffer
      (redis as unknown as { stream: { destroy(): void } }).stream.destroy(); // ioredis will resend it
      await sleep(50);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const value = await within(running, 5_000, 'the resent script');
    assert.ok(runner.maybeResent(mark), 'the runner knows the reply may be that of a second run');
    assert.ok(value === 1 || value === 2, `INCR answered ${value}`);
    redis.disconnect();
  });
});

describe('ScriptRunner#read', (it) => {
  let server: RedisServer;
  let admin: Redis;
  let redis: Redis;
  it.before(async () => {
    server = await startPrivateRedis();
    admin = server.connect();
    redis = server.connect();
  });
  it.after(() => server.stop());

  it('reads type, pttl and hget', async () => {
    const runner = runners(redis);
    const key = uniqueName('hash');
    await admin.hset(key, 'owner', '2');
    await admin.pexpire(key, 10_000);
    assert.is(await runner.read('type', key), 'hash');
    const pttl = await runner.read<number>('pttl', key);
    assert.ok(pttl > 9_000 && pttl <= 10_000, `pttl ${pttl}`);
    assert.is(await runner.read('hget', key, 'owner'), '2');
  });

  it('classifies a WRONGTYPE of a read as ERR_LOCK_WRONG_TYPE', async () => {
    const runner = runners(redis);
    const key = uniqueName('string');
    await admin.set(key, 'v');
    const error = await rejects(runner.read('hget', key, 'owner'));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_WRONG_TYPE');
  });
});
