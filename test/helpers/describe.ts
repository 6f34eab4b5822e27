// uvu suites that cannot forget .run(), with a per-test time limit (uvu has none) and counts for
// the closing "N passed, N failed" line.
import { suite, type Test } from 'uvu';
import { randomUUID } from 'node:crypto';

export const counts = { passed: 0, failed: 0 };

type Body = () => void | Promise<void>;

export interface It {
  (name: string, body: Body, limitMs?: number): void;
  before(body: Body): void;
  after(body: Body): void;
}

/**
 * `it` for a test of what the server under test may lack: where it is not `applicable` the test is
 * listed as not applicable "without <what>", not run (the server matrix's older servers).
 */
export function applicableOnly(it: It, applicable: boolean, what: string): (name: string, body: Body, limitMs?: number) => void {
  return (name, body, limitMs) => {
    if (applicable) it(name, body, limitMs);
    else console.log(`  not applicable without ${what} (${[process.env.RELOCK_SERVER, process.env.RELOCK_TEST_LAYOUT && `layout ${process.env.RELOCK_TEST_LAYOUT}`].filter(Boolean).join(', ')}): ${name}`);
  };
}

/** Rejects with a message naming `what` when `promise` has not settled within `ms`. */
export async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

export function describe(name: string, define: (it: It) => void, defaultLimitMs = 20_000): void {
  const test: Test = suite(name);
  const it = ((title: string, body: Body, limitMs = defaultLimitMs) => {
    test(title, async () => {
      try {
        await within(Promise.resolve().then(body), limitMs, `${name} > ${title}`);
        counts.passed++;
      } catch (error) {
        counts.failed++;
        throw error;
      }
    });
  }) as It;
  // uvu swallows a failing hook (its tests just do not run): count it as a failure here.
  const hook = (body: Body, what: string) => async () => {
    try {
      await within(Promise.resolve().then(body), 60_000, `${name} (${what})`);
    } catch (error) {
      counts.failed++;
      console.error(`${name} (${what}) failed:`, error);
      throw error;
    }
  };
  it.before = (body) => test.before(hook(body, 'before'));
  it.after = (body) => test.after(hook(body, 'after'));
  define(it);
  test.run();
}

/** A lock name no other test uses. */
export function uniqueName(label = 'lock'): string {
  return `${label}:${randomUUID()}`;
}

/** The error a promise rejects with; fails when it resolves. */
export async function rejects(promise: Promise<unknown>): Promise<any> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('Expected the promise to reject, but it resolved');
}

/** Polls `ok` every 10 ms until true; fails with `what` after `ms`. */
export async function eventually(ok: () => boolean | Promise<boolean>, what: string, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > until) throw new Error(`Never happened within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
