import * as assert from 'uvu/assert';
import { keySlot } from '../../src/runtime/slot.ts';
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
