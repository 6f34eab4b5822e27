// The leader election cells of the contract matrix (cells.ts): one server (a Redlock client and the Redisson layout refuse elections: test/integration/leader).
import { runCells } from './cells.ts';

runCells(import.meta.url);
