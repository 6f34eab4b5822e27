// The multi-lock cells of the contract matrix (cells.ts) on one server.
import { runCells } from './cells.ts';

runCells(import.meta.url);
