// A TCP proxy that puts a network between the bench's clients and Redis (issue 34 point 4): every
// chunk is forwarded half a round trip after it was read, in each direction, in order. There is no
// netem on the bench machines; this is the same link for every library.
//
//   node --import tsx link-proxy.ts <redis host> <redis port> <round trip ms>   # prints "port <n>"
//
// Sub-millisecond waits: Node's timers fire in whole milliseconds, so the last millisecond before a
// chunk is due is waited with Atomics.wait (a futex wait: no CPU spent, microsecond precision). That
// blocks this process's event loop meanwhile: a chunk that arrives during the wait is read after it,
// and leaves up to one wait later than its due time. The proxy's own hop (two more socket reads and
// writes, a turn of its event loop each way) adds to the delay asked for, as measured in link.ts
// (PROXY_HOP), which the report states beside every figure over the link.
import { createConnection, createServer, type Socket } from 'node:net';

const [host, port, rtt] = process.argv.slice(2);
const oneWayMs = Number(rtt) / 2;
if (!host || !Number.isInteger(Number(port)) || !(oneWayMs >= 0)) {
  process.stderr.write('usage: link-proxy.ts <redis host> <redis port> <round trip ms>\n');
  process.exit(2);
}

interface Pending {
  readonly due: number;
  readonly chunk: Buffer;
  readonly to: Socket;
}

/** Every chunk on its way, in the order read (each is due oneWayMs after it was read: in order of due). */
const queue: Pending[] = [];
let head = 0;
let scheduled = false;
const cell = new Int32Array(new SharedArrayBuffer(4));

function forward(): void {
  scheduled = false;
  for (;;) {
    const next = queue[head];
    if (!next) break;
    const waitMs = next.due - performance.now();
    if (waitMs > 1) {
      // Back to the event loop (reading what arrives meanwhile), and here again a millisecond early.
      scheduled = true;
      setTimeout(forward, Math.floor(waitMs - 1));
      return;
    }
    if (waitMs > 0) Atomics.wait(cell, 0, 0, waitMs);
    head++;
    if (!next.to.destroyed) next.to.write(next.chunk);
    // Read what arrived meanwhile before sending more.
    if (queue[head] && queue[head]!.due > performance.now()) break;
  }
  if (head === queue.length) {
    queue.length = 0;
    head = 0;
    return;
  }
  if (head >= 1_024) {
    queue.splice(0, head);
    head = 0;
  }
  scheduled = true;
  setImmediate(forward);
}

function delay(from: Socket, to: Socket): void {
  from.on('data', (chunk: Buffer) => {
    queue.push({ due: performance.now() + oneWayMs, chunk, to });
    if (!scheduled) {
      scheduled = true;
      setImmediate(forward);
    }
  });
}

const server = createServer({ noDelay: true }, (client) => {
  const redis = createConnection({ host, port: Number(port), noDelay: true });
  delay(client, redis);
  delay(redis, client);
  const close = () => {
    client.destroy();
    redis.destroy();
  };
  client.on('close', close).on('error', close);
  redis.on('close', close).on('error', close);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`port ${typeof address === 'object' && address ? address.port : 0}\n`);
});
process.on('SIGTERM', () => process.exit(0));
