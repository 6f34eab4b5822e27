import * as assert from 'uvu/assert';
import { describe, eventually, uniqueName } from '../../helpers/describe.ts';
import { fixture, type Fixture } from '../../helpers/fixture.ts';
import { freePort } from '../../helpers/redis.ts';
import { node, relock, start } from './cli.ts';

let f: Fixture;
let env: { REDIS_URL: string };

// A command that prints `ready`, then on SIGTERM (and SIGINT) prints what it got and exits 5 after
// a pause (so relock must wait for it); it never exits by itself.
const patient = node(`
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => setTimeout(() => { console.log('handled ' + signal); process.exit(5); }, 300));
  console.log('ready'); setInterval(() => {}, 1000);
`);

describe('relock run', (it) => {
  it.before(async () => {
    f = await fixture();
    env = { REDIS_URL: f.server.url };
  });
  it.after(() => f.close());

  it('runs the command under the lock, gives it the fencing token, releases and exits with its code', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--', ...node(`console.log('token ' + process.env.RELOCK_FENCING_TOKEN); setTimeout(() => process.exit(7), 300)`)], env);
    await run.printed('token ');
    assert.is(await f.admin.exists(`relock:{${name}}`), 1, 'the lock is held while the command runs');
    const ended = await run.ended;
    assert.is(ended.code, 7);
    assert.is(ended.stdout.trim(), `token ${await f.admin.get(`relock:{${name}}:fence`)}`);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0, 'released after the command');
  });

  it('exits 75 without running the command while another holds the lock, and runs it once the lock is free within --wait', async () => {
    const name = uniqueName('cli');
    const lease = await f.client().lock(name).acquire();
    const busy = await relock(['run', name, '--', 'echo', 'ran'], env);
    assert.is(busy.code, 75);
    assert.is(busy.stdout, '', 'the command did not run');
    assert.match(busy.stderr, 'is held elsewhere');
    // A wait long enough for a fresh process to connect on a loaded machine: a wait that ends while
    // the connection is still being made is ERR_LOCK_UNREACHABLE (exit 69), not "held".
    const quiet = await relock(['run', name, '--wait', '1500', '--quiet', '--', 'echo', 'ran'], env);
    assert.equal([quiet.code, quiet.stdout, quiet.stderr], [75, '', '']);

    const waiting = start(['run', name, '--wait', '10000', '--', 'echo', 'ran'], env);
    await eventually(async () => (await f.admin.call('pubsub', 'numsub', `relock:{${name}}:released`) as [string, number])[1] === 1, 'relock run waits', 10_000);
    await lease.release();
    const ended = await waiting.ended;
    assert.equal([ended.code, ended.stdout], [0, 'ran\n']);
  });

  it('forwards SIGTERM to the command and waits for it to exit, then releases', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--', ...patient], env);
    await run.printed('ready');
    run.child.kill('SIGTERM');
    const ended = await run.ended;
    assert.equal([ended.code, ended.stdout], [5, 'ready\nhandled SIGTERM\n']);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
  });

  it('forwards SIGINT, and exits 128 + n when a signal n ends the command', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--', ...node(`console.log('ready'); setInterval(() => {}, 1000)`)], env);
    await run.printed('ready');
    run.child.kill('SIGINT');
    assert.is((await run.ended).code, 130);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
  });

  it('sends the command SIGTERM when the lock is lost, and exits 70', async () => {
    const name = uniqueName('cli');
    // --kill-after: the command takes 300 ms to handle SIGTERM, longer than the default grace.
    const run = start(['run', name, '--lease', '1500', '--kill-after', '1000', '--', ...patient], env);
    await run.printed('ready');
    assert.ok(await f.client().lock(name).forceUnlock());
    const ended = await run.ended;
    assert.is(ended.code, 70);
    assert.is(ended.stdout, 'ready\nhandled SIGTERM\n');
    assert.match(ended.stderr, /was lost .*exited with code 5/s);
  });

  it('sends the command SIGTERM at --at-most, and exits 70; the lock is released when the command ends', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--lease', '1500', '--at-most', '400', '--kill-after', '1000', '--', ...patient], env);
    const ended = await run.ended;
    assert.is(ended.code, 70);
    assert.match(ended.stderr, /reached its maxHoldMs \(400 ms\)[^\n]*\): sending \S+ SIGTERM/);
    // The 400 ms run from the acquisition, so on a busy machine they may end before node has started
    // the command's handler: then SIGTERM ends it (no line printed), which relock reports too.
    if (ended.stdout.includes('handled')) assert.is(ended.stdout, 'ready\nhandled SIGTERM\n');
    else assert.match(ended.stderr, /exited with SIGTERM after the lock/);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
  });

  it('sends SIGKILL --kill-after ms after the SIGTERM of a lost lock when the command ignores it', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--lease', '1500', '--kill-after', '200', '--', ...node(`process.on('SIGTERM', () => console.log('ignored')); console.log('ready'); setInterval(() => {}, 1000)`)], env);
    await run.printed('ready');
    await f.admin.del(`relock:{${name}}`);
    const ended = await run.ended;
    assert.is(ended.code, 70);
    assert.is(ended.stdout, 'ready\nignored\n');
    assert.match(ended.stderr, /SIGKILL.*exited with SIGKILL/s);
  });

  it('by default sends SIGKILL halfway between the loss signal and the lease end on Redis (a twentieth of the lease)', async () => {
    const name = uniqueName('cli');
    const run = start(['run', name, '--lease', '1500', '--', ...node(`process.on('SIGTERM', () => console.log('ignored')); console.log('ready'); setInterval(() => {}, 1000)`)], env);
    await run.printed('ready');
    await f.admin.del(`relock:{${name}}`);
    const ended = await run.ended;
    assert.is(ended.code, 70);
    assert.match(ended.stderr, /did not exit within 75 ms of SIGTERM: sending SIGKILL/);
    assert.not.match(ended.stderr, /warning/);
  });

  it('warns when --kill-after is longer than the time the lock stays on Redis after a loss signal', async () => {
    const name = uniqueName('cli');
    const ended = await relock(['run', name, '--lease', '1500', '--kill-after', '200', '--', 'true'], env);
    assert.is(ended.code, 0);
    assert.match(ended.stderr, /warning: --kill-after 200 ms is longer than the 150 ms the lock stays on Redis after a loss signal: .* up to 50 ms/);
  });

  it('stops waiting for the lock on SIGTERM, without running the command', async () => {
    const name = uniqueName('cli');
    const lease = await f.client().lock(name).acquire();
    const run = start(['run', name, '--wait', 'Infinity', '--', 'echo', 'ran'], env);
    await eventually(async () => (await f.admin.call('pubsub', 'numsub', `relock:{${name}}:released`) as [string, number])[1] === 1, 'relock run waits', 10_000);
    run.child.kill('SIGTERM');
    const ended = await run.ended;
    assert.equal([ended.code, ended.stdout], [143, '']);
    await lease.release();
  });

  it('--at-least keeps the lock taken until that long after its acquisition, --keep is its other name', async () => {
    for (const flag of ['--at-least', '--keep']) {
      const name = uniqueName('cli');
      const first = await relock(['run', name, flag, '60000', '--', 'true'], env);
      assert.is(first.code, 0);
      const ttl = await f.admin.pttl(`relock:{${name}}`);
      assert.ok(ttl > 50_000 && ttl <= 60_000, `${flag}: the lock stays taken after the command (PTTL ${ttl})`);
      assert.equal(await f.admin.hgetall(`relock:{${name}}`), { window: '1' }, `${flag}: a window, no owner`);
      assert.is((await relock(['run', name, '--', 'true'], env)).code, 75);
      assert.equal(await f.client().job(name, { atMostMs: 1_000 }).run(() => 'ran'), { ran: false, reason: 'window' }, 'a job of the name sees the window');
    }
    // A command that outlasts --at-least frees the lock when it exits.
    const name = uniqueName('cli');
    assert.is((await relock(['run', name, '--at-least', '100', '--', 'sleep', '0.3'], env)).code, 0);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
  });

  it('--fair takes the fair lock of that name, apart from the plain lock', async () => {
    const name = uniqueName('cli');
    const lease = await f.client().fairLock(name).acquire();
    assert.is((await relock(['run', name, '--fair', '--', 'true'], env)).code, 75);
    assert.is((await relock(['run', name, '--', 'true'], env)).code, 0);
    await lease.release();
  });

  it('exits 127 when the command does not exist, and releases the lock', async () => {
    const name = uniqueName('cli');
    const ended = await relock(['run', name, '--', 'relock-no-such-command'], env);
    assert.is(ended.code, 127);
    assert.match(ended.stderr, 'ENOENT');
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
  });

  it('exits 77 when the Redis user may not use the lock keys (ACL)', async () => {
    if (!f.server.private) return; // no ACL users on a shared server
    await f.admin.call('acl', 'setuser', 'cli-other-keys', 'on', '>secret', '~other:*', '&*', '+@all');
    const name = uniqueName('cli');
    const refused = await relock(['run', name, '--', 'echo', 'ran'], { REDIS_URL: `redis://cli-other-keys:secret@${f.server.host}:${f.server.port}` });
    assert.equal([refused.code, refused.stdout], [77, '']);
    assert.match(refused.stderr, 'ACL');
  });

  it('honours REDIS_URL, lets --redis override it, and exits 69 when Redis is unreachable', async () => {
    const name = uniqueName('cli');
    const nowhere = `redis://127.0.0.1:${await freePort()}`;
    const down = await relock(['run', name, '--', 'echo', 'ran'], { REDIS_URL: nowhere });
    assert.equal([down.code, down.stdout], [69, '']);
    assert.match(down.stderr, 'could not be reached');
    const flag = await relock(['run', name, '--redis', f.server.url, '--', 'echo', 'ran'], { REDIS_URL: nowhere });
    assert.equal([flag.code, flag.stdout], [0, 'ran\n']);
  });
});
