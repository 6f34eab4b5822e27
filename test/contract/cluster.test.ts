// The Cluster column of the contract matrix (cells.ts): every kind of relock's layout on one Redis
// Cluster of 3 masters, lent to each cell in turn.
import { runCells } from './cells.ts';

runCells(import.meta.url);
