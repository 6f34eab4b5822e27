import * as assert from 'uvu/assert';
import { randomUUID } from 'node:crypto';
import { fairLockKeys, grantChannel } from '../../src/fair-lock/keys.ts';
import { lockKeys } from '../../src/lock/keys.ts';
import { keySlot } from '../../src/runtime/slot.ts';
import { rwLockKeys } from '../../src/rw-lock/keys.ts';
import { semaphoreKeys } from '../../src/semaphore/keys.ts';
import { describe } from '../helpers/describe.ts';

describe('keySlot', (it) => {
  // Each expected slot is what `CLUSTER KEYSLOT <key>` answered on Redis 7.0.15.
  const table: [key: string, slot: number, why: string][] = [
    ['123456789', 12739, 'CRC16/XMODEM check value 0x31C3'],
    ['foo', 12182, 'a key without braces: the whole key'],
    ['{user1000}.following', 3443, 'the hash tag'],
    ['user1000', 3443, 'the tag alone'],
    ['foo{bar}{zap}', 5061, 'only the first tag'],
    ['foo{}{bar}', 8363, 'an empty first tag: the whole key (the cluster-key-slot package answers 4015 here)'],
    ['foo{{bar}}zap', 4015, 'the tag runs from the first { to the next }: "{bar"'],
    ['}{x}', 16287, 'a } before the first {'],
    ['relock:{ü}', 9552, 'UTF-8 bytes'],
    ['', 0, 'the empty key'],
  ];
  for (const [key, slot, why] of table) {
    it(`gives ${JSON.stringify(key)} the slot Redis gives it (${why})`, () => assert.is(keySlot(key), slot));
  }

  it('puts a lock key, its fence key and its channel in one slot', () => {
    const slots = ['relock:{order:42}', 'relock:{order:42}:fence', 'relock:{order:42}:released'].map(keySlot);
    assert.equal(new Set(slots).size, 1);
  });
});

describe('tagged', (it) => {
  // Names whose braces Redis's "first { up to the next }" rule could split from their suffixes.
  const braced = ['}x', '{}', 'a{b}c', '{', '}{', 'x}{y}', '}', '}}', '}a}b', '{}}', 'x}', 'order:{42}:lines'];
  const kinds = (prefix: string, name: string): Record<string, string[]> => {
    const fair = fairLockKeys(prefix, name);
    const rw = rwLockKeys(prefix, name);
    const sem = semaphoreKeys(prefix, name);
    return {
      lock: Object.values(lockKeys(prefix, name)),
      'fair lock': [fair.lock, fair.queue, fair.deadlines, fair.fence, grantChannel(fair, randomUUID())],
      'read-write lock': [rw.hash, rw.leases, rw.intents, rw.waiting, rw.batch, rw.fence, rw.toReaders, rw.toWriters],
      semaphore: [sem.sem, sem.leases, sem.fence, sem.channel],
    };
  };

  for (const name of braced) {
    it(`puts every key and channel of each kind named ${JSON.stringify(name)} in one slot`, () => {
      for (const [kind, keys] of Object.entries(kinds('relock', name))) {
        assert.equal(new Set(keys.map(keySlot)).size, 1, `${kind}: ${keys.map((key) => `${key} -> ${keySlot(key)}`).join(', ')}`);
      }
    });
  }

  it('keeps the keys of a name that does not begin with } as they were', () => {
    for (const name of ['order:42', 'a{b}c', '{}', 'x}{y}', '{', 'order:{42}:lines']) {
      assert.is(lockKeys('relock', name).lock, `relock:{${name}}`);
      assert.is(semaphoreKeys('relock', name).channel, `relock:{${name}}:sem:released`);
    }
  });

  it('gives different names different keys, across both forms', () => {
    const names = [...braced, '%7Dx', '}x}', '}x:fence', '}%7Dx', ')x'];
    const all = names.flatMap((name) => Object.values(kinds('relock', name)).flat().filter((key) => !key.includes(':g:')));
    assert.is(new Set(all).size, all.length);
  });
});
