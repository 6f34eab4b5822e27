// The contract suites over the Redisson layout (layout: 'redisson'): each kind it offers keeps every
// promise of relock's own layout, on Redisson's keys (the interop suites in
// test/integration/redisson/, in npm test, check the other side, a Redisson client). Run by
// `npm run test:clients` (its layout-redisson cell) and `npm run test:servers`, not by npm test.
// The cells are rows of the contract matrix, test/contract/cells.ts.
import { runCells } from '../contract/cells.ts';

runCells(import.meta.url);
