// The fault scenarios against client.multiLock(): every section takes 2 or 3 of 4 member locks, in
// a random order, so sections over shared members contend and sections over disjoint pairs run side
// by side.
// The checker judges each member apart, with its own token and counter: no two sections may overlap
// on a shared member. A paused holder's late writes are fenced per member, but only a member that
// a later section wrote rejects them, so they are not asserted stale here.
import { describe } from '../helpers/describe.ts';
import { familyScenarios, NEGATIVE } from './family.ts';

describe('faults: multi-lock', (it) => {
  familyScenarios(it, { kind: 'multi-lock', label: 'multi-lock', options: { members: 4 }, staleLateWrite: false, negative: NEGATIVE });
});
