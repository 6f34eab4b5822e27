// A Redlock error names what happened on each master (issue 30, point 7): with 3 of 5 masters down
// and a client whose connections are made lazily (at its first command), a wait of 1 s ends with
// ERR_LOCK_NO_QUORUM whose message says, per master, "down" (with the connection's error), "no
// answer", "held elsewhere" or the error it answered, and whose cause is one of those failures (a
// refused connection), never the state of a healthy master's connection.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { describe, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { TEST_CLIENT } from '../../helpers/fixture.ts';
import { lockKey, setupMasters } from './masters.ts';

/**
 * A refused connection, as each client family words it: GLIDE as a connection error; node-redis
 * fails the command with its TimeoutError (no message) while it keeps reconnecting, and records no
 * connection error on a client passed in, so its down masters read "down (TimeoutError)", or "down
 * (its connection is down)" when nothing was sent to them.
 */
const REFUSED = TEST_CLIENT.startsWith('node-redis')
  ? /ECONNREFUSED|TimeoutError|its connection is down|connections to .* are down/
  : TEST_CLIENT === 'iovalkey'
    ? // An iovalkey client passed in: its commands fail with the client's "max retries" wrapper and
      // its subscriber is "reconnecting" (the connection's own ECONNREFUSED is not recorded for it:
      // a known gap, docs/redlock.md).
      /ECONNREFUSED|max retries per request|subscriber connection is reconnecting/
    : /ECONNREFUSED|connect failed|Connection error/;

describe('Redlock: a no-quorum error names what each master did (5 masters, 3 down)', (it) => {
  const m = setupMasters(it, 5);
  const down = [0, 2, 4];
  const label = (i: number) => `${m.servers[i]!.host}:${m.servers[i]!.port}`;

  const check = (error: LockError, what: string, up: Record<number, RegExp>) => {
    assert.instance(error, LockError, what);
    assert.is(error.code, 'ERR_LOCK_NO_QUORUM', `${what}: ${error.message}`);
    // Its connection's own failure: a refused connection (GLIDE words it as a connect that failed).
    for (const i of down) assert.match(error.message, new RegExp(`${label(i).replace(/\./g, '\\.')} down \\([^)]*(?:${REFUSED.source})`), `${what}: master ${i} is down in: ${error.message}`);
    for (const [i, said] of Object.entries(up)) {
      assert.match(error.message, new RegExp(`${label(Number(i)).replace(/\./g, '\\.')} ${said.source}`), `${what}: master ${i} in: ${error.message}`);
    }
    assert.not.match(error.message, /no answer yet/, `${what}: ${error.message}`);
    assert.not.match(error.message, /connection is ready/, `${what}: ${error.message}`);
    // The cause is a failure: a refused connection (through the subscriber's own error, when the wait ended subscribing).
    let cause = error.cause;
    while (cause instanceof LockError && cause.cause !== undefined) cause = cause.cause;
    assert.instance(cause, Error, `${what}: a cause`);
    const words = (cause as Error).message || (cause as { code?: string }).code || (cause as Error).constructor.name;
    assert.match(words, REFUSED, `${what}: the cause is a failure: ${words}`);
  };

  it('names each master: down (ECONNREFUSED) for the three down, what the two up did, for acquire({ waitMs: 1000 }), tryAcquire() and acquire()', async () => {
    await Promise.all(down.map((i) => m.servers[i]!.kill()));
    try {
      for (const [what, run] of [
        ['acquire({ waitMs: 1000 })', (name: string) => m.client().lock(name).acquire({ waitMs: 1_000 })],
        ['tryAcquire()', (name: string) => m.client().lock(name).tryAcquire()],
        ['acquire({ waitMs: 0 })', (name: string) => m.client().lock(name).acquire({ waitMs: 0 })],
        ['semaphore acquire({ waitMs: 1000 })', (name: string) => m.client().semaphore(name, { permits: 1 }).acquire({ waitMs: 1_000 })],
      ] as const) {
        // A new client each time: its connections are made at its first command.
        const name = uniqueName('nq');
        const error = (await within(rejects(run(name)), 8_000, what)) as LockError;
        check(error, what, { 1: /(took it|subscribed)/, 3: /(took it|subscribed)/ });
      }
    } finally {
      await Promise.all(down.map((i) => m.servers[i]!.restart()));
    }
  });

  it('names a master that holds it for another owner as "held elsewhere"', async () => {
    const name = uniqueName('nq');
    await m.admins[1]!.hset(lockKey(name), 'other:owner', '1');
    await m.admins[1]!.pexpire(lockKey(name), 60_000);
    await Promise.all(down.map((i) => m.servers[i]!.kill()));
    try {
      const tried = (await within(rejects(m.client().lock(name).tryAcquire()), 8_000, 'the tryAcquire')) as LockError;
      check(tried, 'tryAcquire()', { 1: /held elsewhere/, 3: /took it \(given back\)/ });
      // A wait names what its last step found: its attempts, or its subscriptions (up: "subscribed").
      const waited = (await within(rejects(m.client().lock(name).acquire({ waitMs: 1_000 })), 8_000, 'the acquire')) as LockError;
      check(waited, 'acquire({ waitMs: 1000 })', { 1: /(held elsewhere|subscribed)/, 3: /(took it|subscribed)/ });
    } finally {
      await Promise.all(down.map((i) => m.servers[i]!.restart()));
    }
  });
});
