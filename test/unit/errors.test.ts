import * as assert from 'uvu/assert';
import { LockError, LockLostError, LockNotHeldError, LockTimeoutError } from '../../src/index.ts';
import { describe } from '../helpers/describe.ts';

describe('errors', (it) => {
  const table = [
    [LockError, 'LockError', 'ERR_LOCK'],
    [LockTimeoutError, 'LockTimeoutError', 'ERR_LOCK_TIMEOUT'],
    [LockNotHeldError, 'LockNotHeldError', 'ERR_LOCK_NOT_HELD'],
    [LockLostError, 'LockLostError', 'ERR_LOCK_LOST'],
  ] as const;
  for (const [ErrorClass, name, code] of table) {
    it(`${name} has a literal name, the code ${code}, a cause and a lock name`, () => {
      const cause = new Error('underneath');
      const error = new ErrorClass('message', { cause, lockName: 'order:1' });
      assert.instance(error, LockError);
      assert.instance(error, Error);
      assert.is(error.name, name);
      assert.is(error.code, code);
      assert.is(error.cause, cause);
      assert.is(error.lockName, 'order:1');
      assert.ok(String(error).startsWith(`${name}: message`));
    });
  }
});
