// Security and server configuration: a least-privilege ACL user, TLS, unguessable ids, names that
// never reach script text, and the warning about a maxmemory-policy that can evict lock keys.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import * as scripts from '../../../src/generated/lock.ts';
import { LockClient, LockError, type Lease } from '../../../src/index.ts';
import { CHANNEL_ACL, channelAclOnly, createRelockUser, relockCommands } from '../../helpers/acl.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { freePort, startPrivateRedis, type RedisServer } from '../../helpers/redis.ts';
import { makeCertificates, tlsUnavailable, type Certificates } from '../../helpers/tls.ts';
import { scenario } from '../../faults/harness.ts';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** ACL LOG entries as objects. */
async function aclLog(admin: Redis): Promise<Array<Record<string, unknown>>> {
  const entries = (await admin.call('ACL', 'LOG')) as unknown[][];
  return entries.map((entry) => {
    const object: Record<string, unknown> = {};
    for (let i = 0; i < entry.length; i += 2) object[String(entry[i])] = entry[i + 1];
    return object;
  });
}

/** The core of what relock does, on one client pair: contention woken by a release, renewal, re-entry, reads. */
async function exerciseCore(a: LockClient, b: LockClient): Promise<void> {
  const name = uniqueName('core');
  const held = await a.lock(name).acquire({ leaseMs: 10_000 });
  assert.is(await b.lock(name).tryAcquire(), null, 'a second client is kept out');
  const waiting = b.lock(name).acquire();
  await eventually(() => b.waiting === 1, 'the waiter is queued');
  await held.release();
  // The holder's lease was 10 s: only the release's publish can wake the waiter this soon.
  const next = await within(waiting, 3_000, 'the waiter woken by the release');
  assert.ok(next.fencingToken > held.fencingToken);
  await next.release();

  // Watchdog renewal across three leases (the clients' leaseMs is short).
  const renewed = await a.lock(uniqueName('renew')).acquire();
  await sleep(3 * a.leaseMs);
  assert.is(renewed.signal.aborted, false, 'renewals kept the lease');
  await renewed.release();

  const lock = a.lock(uniqueName('reads'));
  await lock.runExclusive(async (lease) => {
    assert.is(await lock.holdCount(), 1);
    const nested = await lock.acquire();
    assert.is(nested.holdCount, 2);
    assert.is(nested.fencingToken, lease.fencingToken);
    await nested.release();
    assert.ok(await lock.isLocked());
    const ttl = await lock.remainingTtlMs();
    assert.ok(ttl !== null && ttl > 0);
  });
  assert.not.ok(await lock.isLocked());
  const forced = await a.lock(uniqueName('force')).acquire();
  assert.ok(await b.lock(forced.name).forceUnlock());
  await eventually(() => forced.signal.aborted, 'the forced-out holder learns it at its next renewal', 3_000);
  assert.is(forced.signal.reason.code, 'ERR_LOCK_LOST');
}

describe('Security: least-privilege ACL user', (it) => {
  const channelAcl = channelAclOnly(it);
  let server: RedisServer;
  let admin: Redis;
  const clients: LockClient[] = [];
  const client = (options: Record<string, unknown>, more: Record<string, unknown> = {}) => {
    const c = new LockClient({ redis: { host: server.host, port: server.port, ...options }, leaseMs: 600, ...more });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };

  it.before(async () => {
    server = await startPrivateRedis({ private: true });
    admin = server.connect();
  });
  it.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server.stop();
  });

  it('works for a user allowed only relock commands, ~relock:* and &relock:*', async () => {
    const user = await createRelockUser(admin, 'relock-app');
    await admin.call('ACL', 'LOG', 'RESET');
    const a = client(user.options);
    const b = client(user.options);
    await exerciseCore(a, b);
    await a.close();
    await b.close();
    // The only command refused is the optional CONFIG GET of the eviction check (logged as "config" on Redis 6.0).
    const denied = (await aclLog(admin)).filter((entry) => !/^config(\|get)?$/.test(String(entry.object)));
    assert.equal(denied, [], `relock needed more than ${relockCommands().join(' ')}`);
  });

  it('is really confined: the same user can touch no other key, channel or command', async () => {
    const user = await createRelockUser(admin, 'relock-confined');
    const raw = new Redis({ host: server.host, port: server.port, ...user.options, maxRetriesPerRequest: 0 });
    raw.on('error', () => undefined);
    try {
      assert.match((await rejects(raw.set('other:key', '1'))).message, /NOPERM/);
      assert.match((await rejects(raw.get('other:key'))).message, /NOPERM/);
      assert.match((await rejects(raw.call('FLUSHALL'))).message, /NOPERM/);
      assert.match((await rejects(raw.call('KEYS', '*'))).message, /NOPERM/);
      assert.match((await rejects(raw.eval("return redis.call('SET', KEYS[1], '1')", 1, 'other:key'))).message, /NOPERM|permission/i);
      if (CHANNEL_ACL) assert.match((await rejects(raw.call('PUBLISH', 'other:channel', 'x'))).message, /NOPERM/);
      assert.is(await admin.exists('other:key'), 0);
    } finally {
      raw.disconnect();
    }
  });

  it('works under its own prefix, and a client with another prefix is refused clearly', async () => {
    const user = await createRelockUser(admin, 'relock-app-locks', { prefix: 'app-locks' });
    const a = client(user.options, { prefix: 'app-locks' });
    const b = client(user.options, { prefix: 'app-locks' });
    await exerciseCore(a, b);
    const wrong = client(user.options);
    const error = await rejects(wrong.lock(uniqueName()).acquire({ waitMs: 1_000 }));
    assert.match(error.message, /NOPERM|permission/i);
  });

  channelAcl('refuses the release of a user without channel permission with nothing changed', async () => {
    const noChannels = await createRelockUser(admin, 'relock-no-channels-release', { channels: false });
    const c = client(noChannels.options);
    const name = uniqueName();
    const lease = await c.lock(name).acquire({ leaseMs: 30_000 }); // uncontended: no wait, no SUBSCRIBE
    const error = await rejects(lease.release());
    assert.instance(error, LockError);
    assert.ok(error.message.includes(`relock:{${name}}:released`), `names the channel: ${error.message}`);
    assert.match(error.message, /nothing was changed/);
    assert.is(await admin.exists(`relock:{${name}}`), 1, 'the lock is still held: PUBLISH is refused before any DEL');
    assert.is(await admin.del(`relock:{${name}}`), 1);
  });

  channelAcl('gives a user without channel permission a clear error at the first wait, not a silent hang', async () => {
    const full = await createRelockUser(admin, 'relock-full');
    const noChannels = await createRelockUser(admin, 'relock-no-channels', { channels: false });
    const holder = client(full.options);
    const waiter = client(noChannels.options);
    const name = uniqueName();
    const held = await holder.lock(name).acquire({ leaseMs: 30_000 });
    const started = performance.now();
    const error = await within(rejects(waiter.lock(name).acquire()), 5_000, 'the first wait without channel permission');
    const ms = performance.now() - started;
    assert.instance(error, LockError);
    assert.ok(error.message.includes(`relock:{${name}}:released`), `names the channel: ${error.message}`);
    assert.match(error.message, /NOPERM/);
    assert.ok(ms < 2_000, `failed after ${Math.round(ms)} ms, not after the 30 s lease`);
    assert.is(waiter.waiting, 0, 'no waiter is left queued');
    await held.release();
  });
});

describe('Security: TLS', (it) => {
  const unavailable = tlsUnavailable();
  let certificates: Certificates;
  let server: RedisServer;
  let tlsOptions: { host: string; port: number; tls: { ca: string; servername: string } };
  const clients: LockClient[] = [];

  if (unavailable) {
    it(`is skipped: ${unavailable}`, () => {
      console.log(`  TLS tests skipped: ${unavailable}`);
    });
    return;
  }

  it.before(async () => {
    certificates = makeCertificates();
    const tlsPort = await freePort();
    tlsOptions = { host: '127.0.0.1', port: tlsPort, tls: { ca: certificates.ca, servername: 'localhost' } };
    server = await startPrivateRedis({
      private: true,
      args: [
        '--port', '0',
        '--tls-port', String(tlsPort),
        '--tls-cert-file', certificates.certFile,
        '--tls-key-file', certificates.keyFile,
        '--tls-ca-cert-file', certificates.caFile,
        '--tls-auth-clients', 'no',
      ],
      readyPort: tlsPort,
      connectOptions: tlsOptions,
    });
  });
  it.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await server?.stop();
    certificates?.remove();
  });

  it('serves only TLS: a plain connection to the TLS port gets no answer', async () => {
    const plain = new Redis({ host: '127.0.0.1', port: tlsOptions.port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000 });
    plain.on('error', () => undefined);
    const answered = await within(
      plain.connect().then(() => plain.ping()).then(() => true, () => false),
      5_000,
      'a plain PING to the TLS port',
    );
    plain.disconnect();
    assert.is(answered, false);
  });

  it('runs the core of relock over TLS: contention, wake-up, renewal, re-entry, force unlock', async () => {
    const a = new LockClient({ redis: tlsOptions, leaseMs: 600 });
    const b = new LockClient({ redis: tlsOptions, leaseMs: 600 });
    clients.push(a, b);
    await exerciseCore(a, b);
  });

  it('keeps mutual exclusion over TLS with three processes, a SIGKILLed holder and killed subscribers', async () => {
    const { report } = await scenario(
      { name: 'TLS: contention, SIGKILL, CLIENT KILL TYPE pubsub', workers: 3, leaseMs: 1_000, server: { server, options: tlsOptions }, limitMs: 45_000 },
      async (run) => {
        await run.sleep(500);
        const held = await run.hold(run.live[0]!);
        const killedAt = run.kill(held.worker);
        const next = await run.nextStart(killedAt, 10_000, held.token);
        run.notes.push(`recovery after kill ${Math.round(next.start - killedAt)} ms`);
        for (let i = 0; i < 4; i++) {
          run.fault('CLIENT KILL TYPE pubsub');
          await run.admin.client('KILL', 'TYPE', 'PUBSUB');
          await run.sleep(250);
        }
      },
    );
    assert.equal(report.problems, []);
    assert.is(report.overlaps.length, 0);
    assert.ok(report.acquisitions > 20, `only ${report.acquisitions} sections over TLS`);
    assert.ok(report.stalls[0]!.ms <= 1_500, `the others went on ${Math.round(report.stalls[0]!.ms)} ms after the kill`);
  }, 60_000);
});

/** Undoes Redis's sdscatrepr escaping of a MONITOR argument. */
function unrepr(text: string): string {
  const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b', '"': '"', '\\': '\\' };
  return text.replace(/\\(x[0-9a-f]{2}|.)/g, (_, c: string) => (c.length === 3 ? String.fromCharCode(Number.parseInt(c.slice(1), 16)) : (simple[c] ?? c)));
}

describe('Security: ids and names', (it) => {
  let server: RedisServer;
  let admin: Redis;
  let client: LockClient;
  let other: LockClient;

  it.before(async () => {
    server = await startPrivateRedis({ private: true });
    admin = server.connect();
    client = new LockClient({ redis: server.url });
    other = new LockClient({ redis: server.url });
  });
  it.after(async () => {
    await client.close();
    await other.close();
    await server.stop();
  });

  it('gives each client a random v4 UUID, and each hold an owner field <client id>:<random UUID>', async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const c = new LockClient({ redis: server.url });
      assert.match(c.id, UUID_V4);
      ids.add(c.id);
      await c.close();
    }
    assert.is(ids.size, 200);
    const name = uniqueName();
    const lease = await client.lock(name).acquire();
    const fields = await admin.hkeys(`relock:{${name}}`);
    assert.is(fields.length, 1);
    const [clientId, contextId] = [fields[0]!.slice(0, 36), fields[0]!.slice(37)];
    assert.is(clientId, client.id);
    assert.match(contextId, UUID_V4);
    await lease.release();
  });

  it('draws every id from crypto: the source has randomUUID from node:crypto and no Math.random', () => {
    const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src');
    const sources = readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => [f, readFileSync(join(dir, f), 'utf8')] as const);
    for (const [file, source] of sources) assert.not.ok(/Math\.random/.test(source), `${file} uses Math.random`);
    const users = sources.filter(([, source]) => /randomUUID\(\)/.test(source));
    assert.ok(users.length > 0);
    for (const [file, source] of users) assert.match(source, /import \{[^}]*randomUUID[^}]*\} from 'node:crypto'/, `${file} takes randomUUID from node:crypto`);
  });

  const hostile = [
    `'; redis.call('FLUSHALL') --`,
    `"); redis.call("SET", "pwned", "1") --`,
    `]]..redis.call('SET','pwned','1')..[[`,
    `\\' \\" \\\\ %s %d %q`,
    `{}{}}{`,
    `line\nbreak\r\ttab`,
    `nul\u0000byte`,
    `🔒 λ ü 中`,
    `$(touch /tmp/relock-pwned) \`id\``,
  ];

  it('locks names full of Lua, quote and control characters as plain data: only the known scripts ever run', async () => {
    await admin.set('canary', 'alive');
    const watcher = new Redis({ host: server.host, port: server.port });
    watcher.on('error', () => undefined);
    const monitor = await watcher.monitor();
    monitor.on('error', () => undefined);
    const seen: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => seen.push(args));
    const known = new Map<string, string>(Object.values(scripts).map((s) => [s.sha1, s.source]));
    const leases: Lease[] = [];
    for (const name of hostile) {
      const lock = client.lock(name);
      await lock.runExclusive(async (lease) => {
        leases.push(lease);
        assert.is(await other.lock(name).tryAcquire(), null, `${JSON.stringify(name)} excludes`);
        assert.is(await lock.holdCount(), 1);
        assert.ok(await admin.exists(`relock:{${name}}`), `the key holds the exact name ${JSON.stringify(name)}`);
        const nested = await lock.acquire();
        await nested.release();
      });
      assert.not.ok(await lock.isLocked());
      // A waiter on the same hostile name is woken by its release.
      const held = await other.lock(name).acquire();
      const waiting = client.lock(name).acquire();
      await eventually(() => client.waiting === 1, 'queued');
      await held.release();
      await (await within(waiting, 3_000, `the waiter on ${JSON.stringify(name)}`)).release();
    }
    await sleep(100);
    monitor.disconnect();
    watcher.disconnect();
    assert.is(await admin.get('canary'), 'alive');
    assert.is(await admin.exists('pwned'), 0);
    const scriptCalls = seen.filter((args) => /^(evalsha|eval)$/i.test(args[0] ?? ''));
    assert.ok(scriptCalls.length >= hostile.length * 4, `saw ${scriptCalls.length} script calls`);
    for (const args of scriptCalls) {
      const command = args[0]!.toLowerCase();
      if (command === 'evalsha') assert.ok(known.has(args[1]!), `EVALSHA of an unknown script ${args[1]}`);
      // MONITOR shows arguments escaped (sdscatrepr): undo it before comparing.
      else assert.ok([...known.values()].includes(unrepr(args[1]!)), 'EVAL of a script text that is not one of relock’s');
    }
    const cached = Number(/number_of_cached_scripts:(\d+)/.exec(await admin.info('memory'))?.[1]);
    assert.ok(cached <= known.size, `${cached} scripts cached: the script text never varies with the name`);
  });
});

describe('Security: maxmemory-policy warning', (it) => {
  async function warningsFor(policy: string): Promise<LockError[]> {
    const server = await startPrivateRedis({ private: true, args: ['--maxmemory-policy', policy] });
    const client = new LockClient({ redis: server.url });
    const warnings: LockError[] = [];
    client.on('warning', (warning: LockError) => warnings.push(warning));
    try {
      const lease = await client.lock(uniqueName()).acquire();
      await lease.release();
      await (await client.lock(uniqueName()).acquire()).release();
      await sleep(300);
      return warnings;
    } finally {
      await client.close();
      await server.stop();
    }
  }

  for (const policy of ['allkeys-lru', 'volatile-ttl']) {
    it(`emits one 'warning' (a LockError naming the policy) when maxmemory-policy is ${policy}`, async () => {
      const warnings = await warningsFor(policy);
      assert.is(warnings.length, 1);
      assert.instance(warnings[0], LockError);
      assert.is(warnings[0]!.code, 'ERR_LOCK_EVICTION_POLICY');
      assert.ok(warnings[0]!.message.includes(policy), warnings[0]!.message);
      assert.match(warnings[0]!.message, /noeviction/);
    });
  }

  it('emits no warning when maxmemory-policy is noeviction', async () => {
    assert.equal(await warningsFor('noeviction'), []);
  });
});
