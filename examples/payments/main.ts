// Payments of one account one after another, different accounts in parallel, with a nested helper.
//
// pay() locks its account and works on its own; transfer() locks both accounts (always in the same
// order, so two opposite transfers cannot deadlock) and calls pay() for each side, which re-enters
// the lock its caller holds instead of waiting for itself. Three app servers (three LockClients)
// run 60 deposits, withdrawals and transfers at once. Every payment writes "begin" and "end" to its
// account's journal: under the lock, they never interleave, and no update is lost.
//
//   node --import tsx examples/payments/main.ts            # exits 1 if payments interleaved
//   node --import tsx examples/payments/main.ts --no-lock  # the same without the lock: they do
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient } from 'relock';
import { startRedis } from 'relock/testing';

const ACCOUNTS = ['alice', 'bob', 'carol'];
const OPENING = 100;
const useLock = !process.argv.includes('--no-lock');

await using redis = await startRedis();
const db = new Redis(redis.url); // stands for the ledger database
const servers = Array.from({ length: 3 }, () => new LockClient({ redis: redis.url }));
const run = randomUUID();
const key = (what: string, account: string) => `${what}:${run}:${account}`;
const applied = new Map(ACCOUNTS.map((account) => [account, 0]));
let deepest = 0;

/** Within the lock when useLock: what the app would write with `runExclusive`. */
function exclusive<T>(client: LockClient, account: string, fn: () => Promise<T>): Promise<T> {
  return useLock ? client.lock(`account:${run}:${account}`).runExclusive(async (lease) => {
    deepest = Math.max(deepest, lease.holdCount);
    return fn();
  }) : fn();
}

/** Credits (amount > 0) or debits an account; declines a debit the balance cannot cover. */
function pay(client: LockClient, account: string, amount: number, op: string): Promise<boolean> {
  return exclusive(client, account, async () => {
    await db.rpush(key('journal', account), `begin ${op}`);
    const balance = Number(await db.get(key('balance', account)));
    await sleep(2); // check limits, call the bank...
    const ok = balance + amount >= 0;
    if (ok) {
      await db.set(key('balance', account), balance + amount);
      applied.set(account, applied.get(account)! + amount);
    }
    await db.rpush(key('journal', account), `end ${op}`);
    return ok;
  });
}

/** Moves money between two accounts: both locks, taken in sorted order, then pay() twice. */
function transfer(client: LockClient, from: string, to: string, amount: number, op: string): Promise<boolean> {
  const [first, second] = [from, to].sort() as [string, string];
  return exclusive(client, first, () =>
    exclusive(client, second, async () => (await pay(client, from, -amount, op)) && pay(client, to, amount, op)),
  );
}

let seed = 42; // a fixed pseudo-random workload
const random = (n: number) => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) % n;

try {
  for (const account of ACCOUNTS) await db.set(key('balance', account), OPENING);
  await Promise.all(
    Array.from({ length: 60 }, (_, i) => {
      const client = servers[i % servers.length]!;
      const [a, b] = [ACCOUNTS[random(3)]!, ACCOUNTS[random(3)]!];
      const amount = 10 + random(50);
      if (i % 3 === 0 && a !== b) return transfer(client, a, b, amount, `transfer-${i}`);
      return pay(client, a, i % 2 === 0 ? amount : -amount, `payment-${i}`);
    }),
  );

  const problems: string[] = [];
  for (const account of ACCOUNTS) {
    const journal = await db.lrange(key('journal', account), 0, -1);
    for (let i = 0; i < journal.length; i += 2) {
      const op = journal[i]!.slice('begin '.length);
      if (journal[i] !== `begin ${op}` || journal[i + 1] !== `end ${op}`) {
        problems.push(`${account}: ${journal[i]} interleaved with ${journal[i + 1]}`);
        break;
      }
    }
    const balance = Number(await db.get(key('balance', account)));
    const expected = OPENING + applied.get(account)!;
    console.log(`${account}: balance ${balance}, ${journal.length / 2} payments`);
    if (balance !== expected) problems.push(`${account}: balance ${balance}, but the opening balance and the payments applied make ${expected} (a lost update)`);
    if (balance < 0) problems.push(`${account}: balance ${balance} is negative`);
  }
  if (useLock) console.log(`transfers re-entered the account locks: deepest hold count ${deepest}`);
  if (useLock && deepest < 2) problems.push('no payment re-entered its account lock inside a transfer');
  if (problems.length > 0) {
    console.log(`INTERLEAVED:\n  ${problems.join('\n  ')}`);
    process.exitCode = 1;
  } else {
    console.log('OK: each account took its payments one at a time; no update was lost');
  }
  await db.del(...ACCOUNTS.flatMap((account) => [key('balance', account), key('journal', account)]));
} finally {
  await Promise.all(servers.map((client) => client.close()));
  db.disconnect();
}
