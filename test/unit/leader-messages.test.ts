// The messages of an election's channel (src/leader/commands.ts): what campaign-3.lua and a
// resignation publish, named; anything else is no change.
import * as assert from 'uvu/assert';
import { parseChange } from '../../src/leader/commands.ts';
import { describe } from '../helpers/describe.ts';

describe('leader: parseChange', (it) => {
  it('names a term that began, a candidate with colons and newlines kept whole', () => {
    assert.equal(parseChange('elected:1796674301109783:1796674301109:host-a:4242'), {
      kind: 'elected',
      leader: { epoch: 1796674301109783, since: 1796674301109, candidate: 'host-a:4242' },
    });
    assert.equal(parseChange('elected:7:8:a\nb'), { kind: 'elected', leader: { epoch: 7, since: 8, candidate: 'a\nb' } });
  });

  it('names a resignation, with its epoch or without one (a give-back of a term never learnt)', () => {
    assert.equal(parseChange('resigned:1796674301109783'), { kind: 'resigned', epoch: 1796674301109783 });
    assert.equal(parseChange('resigned:'), { kind: 'resigned', epoch: undefined });
    assert.equal(parseChange('resigned:0'), { kind: 'resigned', epoch: undefined });
  });

  it('ignores anything else (a lock release, a malformed term)', () => {
    for (const message of ['release', 'force', '0', 'elected:x:1:c', 'elected:1:2', '']) assert.is(parseChange(message), undefined, message);
  });
});
