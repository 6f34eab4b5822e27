// The fault scenarios against client.readWriteLock(): 70 % of sections read (seeded per section),
// the others write; the faults hit a writer (the side everyone waits for). The checker: no write
// section beside any other section; the writes alone pass the lock's check (increasing tokens, the
// counter's fenced read-modify-write chain); a reader that read the counter twice saw no change.
import { describe } from '../helpers/describe.ts';
import { familyScenarios, NEGATIVE } from './family.ts';

describe('faults: read-write lock', (it) => {
  familyScenarios(it, { kind: 'rw-lock', label: 'rw-lock', options: { readRatio: 0.7 }, holdMode: 'write', staleLateWrite: true, negative: NEGATIVE });
});
