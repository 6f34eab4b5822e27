// The fault scenarios against client.semaphore(): 3 permits, each acquire asking for 1 or 2 of them
// (seeded per section), so holders share in every mix (1+1+1, 1+2) and two 2-permit holders must not.
// The checker sums the permits of the sections holding at each instant: never above 3. A holder's
// section INCRs a counter (no fence: holders run side by side), which must match the sections logged.
import { describe } from '../helpers/describe.ts';
import { familyScenarios, NEGATIVE } from './family.ts';

describe('faults: semaphore', (it) => {
  familyScenarios(it, { kind: 'semaphore', label: 'semaphore', options: { permits: 3, maxPermits: 2 }, staleLateWrite: false, negative: NEGATIVE });
});
