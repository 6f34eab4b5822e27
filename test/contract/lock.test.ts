// The lock cells of the contract matrix (cells.ts) on one server and on a Redlock client.
import { runCells } from './cells.ts';

runCells(import.meta.url);
