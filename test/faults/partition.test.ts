// Fault 5: a network partition between one holder of a lock() and Redis (partition.ts).
import { describe } from '../helpers/describe.ts';
import { partitionScenario } from './partition.ts';

describe('faults: network partition between a holder and Redis', (it) => partitionScenario(it, 'lock', 'lock()', 'ERR_LOCK_NOT_HELD'));
