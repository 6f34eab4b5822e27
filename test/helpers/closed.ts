// What a call made after LockClient#close() rejects with (issue 31, point 5): a LockError
// ERR_LOCK_CLOSED whose cause is close()'s AbortError, the one pending waits got.
import * as assert from 'uvu/assert';
import { LockError } from '../../src/index.ts';

export function assertClosedBeforeCall(error: unknown, what = 'a call after close()'): void {
  assert.instance(error, LockError, `${what}: a LockError (got ${String(error)})`);
  assert.is((error as LockError).code, 'ERR_LOCK_CLOSED', `${what}: its code`);
  assert.match((error as LockError).message, /closed/, `${what}: its message`);
  assert.is(((error as LockError).cause as Error | undefined)?.name, 'AbortError', `${what}: close()'s AbortError is its cause`);
}
