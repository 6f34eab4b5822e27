// Keeps a server busy running a script for about `ms` (its clients' commands pile up meanwhile). The
// script counts instead of reading TIME in a loop: Valkey's scripts see one TIME for their whole run,
// so a loop until TIME moves on never ends before the busy threshold (5 s), and other clients get
// BUSY replies instead of waiting.
import type { Redis } from 'ioredis';

const COUNT = `local x = 0
for i = 1, tonumber(ARGV[1]) do x = x + i end
return 1`;

const rates = new WeakMap<Redis, number>();

/** Iterations per millisecond of the counting script on this connection's server, measured once. */
async function rateOf(connection: Redis): Promise<number> {
  let rate = rates.get(connection);
  if (rate === undefined) {
    const n = 2_000_000;
    await connection.eval(COUNT, 0, 1_000); // load and warm
    const started = performance.now();
    await connection.eval(COUNT, 0, n);
    rate = n / Math.max(1, performance.now() - started);
    rates.set(connection, rate);
  }
  return rate;
}

/** Runs the counting script for about `ms` on `connection`'s server; resolves when it has run. */
export async function busyFor(connection: Redis, ms: number): Promise<void> {
  await connection.eval(COUNT, 0, Math.round((await rateOf(connection)) * ms));
}
