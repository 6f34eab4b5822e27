// Measures Bun.RedisClient for what relock needs from a client (docs/compatibility.md, "Bun's own
// client"): scripts through send(), pub/sub with a second connection, reconnection and what happens
// to a command in flight when the server goes away, and Cluster. Run with Bun only:
//   bun test/runtimes/bun-redis-client.mjs        (a private redis-server on a free port, from the PATH)
// Prints one line per finding; exits non-zero when Bun.RedisClient is missing.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';

if (typeof Bun === 'undefined' || typeof Bun.RedisClient !== 'function') {
  console.log('Bun.RedisClient: not present');
  process.exit(1);
}
const freePort = () => new Promise((resolve) => { const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); }); });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const port = await freePort();
const start = () => spawn('redis-server', ['--port', String(port), '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
let server = start();
await sleep(300);
const url = `redis://127.0.0.1:${port}`;
const found = {};
const client = new Bun.RedisClient(url);
await client.connect();
try {
  found.evalsha = String(await client.send('EVAL', ["return redis.call('set', KEYS[1], ARGV[1])", '1', 'k', 'v']));
  const sha = await client.send('SCRIPT', ['LOAD', 'return 42']);
  found.evalshaReply = await client.send('EVALSHA', [sha, '0']);
  found.noscript = await client.send('EVALSHA', ['0000000000000000000000000000000000000000', '0']).then(() => 'no error', (e) => `${e.name}: ${e.message}`);
} catch (e) { found.scripts = `failed: ${e}`; }
// pub/sub: a subscriber connection, a message published on the command connection.
const subscriber = await client.duplicate?.() ?? new Bun.RedisClient(url);
let messages = 0;
await subscriber.subscribe('ch', () => messages++);
await client.publish('ch', 'x');
await sleep(100);
found.pubsub = `1 published, ${messages} received`;
// The server killed with a command in flight (a blocking BLPOP), then started again.
const inflight = client.send('BLPOP', ['list', '5']).then(() => 'resolved', (e) => `rejected (${e.name}: ${e.message})`);
await sleep(100);
server.kill('SIGKILL');
await sleep(200);
const whileDown = client.send('PING', []).then(() => 'answered', (e) => `rejected (${e.message})`);
server = start();
await sleep(1_500);
found.inflightAtKill = await Promise.race([inflight, sleep(6_000).then(() => 'still pending after 6 s')]);
found.commandWhileDown = await Promise.race([whileDown, sleep(3_000).then(() => 'still pending after 3 s')]);
found.afterRestart = await client.send('PING', []).then((r) => `answered ${r}`, (e) => `rejected (${e.message})`);
// Published every 200 ms for 10 s: does the subscriber connection come back subscribed?
messages = 0;
let published = 0;
for (const until = Date.now() + 10_000; Date.now() < until && messages === 0; published++) {
  await client.publish('ch', 'y').catch(() => undefined);
  await sleep(200);
}
found.resubscribed = messages > 0 ? `yes (after ${published} publications)` : `no (${published} publications over 10 s after the restart, none received)`;
found.subscriberConnected = String(subscriber.connected);
found.cluster = 'no Cluster client in Bun (Bun.RedisClient takes one server URL)';
found.commandTimeout = 'no per-command timeout option (connectionTimeout, idleTimeout, autoReconnect, maxRetries, enableOfflineQueue)';
for (const [key, value] of Object.entries(found)) console.log(`${key}: ${value}`);
client.close();
subscriber.close();
server.kill('SIGKILL');
