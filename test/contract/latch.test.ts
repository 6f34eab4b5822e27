// The latch cells of the contract matrix (cells.ts) on one server (a Redlock client refuses the latch).
import { runCells } from './cells.ts';

runCells(import.meta.url);
