// The contract matrix (test/contract/cells.ts) and the files that run it agree: every cell is run by
// a test file that exists and runs the table's cells, every such file runs some cell, and no cell is
// in the table twice.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as assert from 'uvu/assert';
import { CELLS, fileOf, labelOf } from '../contract/cells.ts';
import { describe } from '../helpers/describe.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const testFiles = (folder: string) =>
  readdirSync(join(root, folder))
    .filter((file) => file.endsWith('.test.ts'))
    .map((file) => `${folder}/${file}`);

describe('the contract matrix', (it) => {
  it('names each cell once, by kind, topology and layout, and each label once', () => {
    const keys = CELLS.map((cell) => `${cell.kind}/${cell.topology}/${cell.layout}`);
    assert.equal(keys.filter((key, i) => keys.indexOf(key) !== i), [], 'cells in the table twice');
    const labels = CELLS.map(labelOf);
    assert.equal(labels.filter((label, i) => labels.indexOf(label) !== i), [], 'labels twice');
  });

  it('runs every cell from a test file that runs the table, and every such file runs some cell', () => {
    const files = [...testFiles('contract'), ...testFiles('layouts')];
    for (const file of files) {
      assert.match(readFileSync(join(root, file), 'utf8'), /^runCells\(import\.meta\.url\);$/m, `${file} runs the table's cells`);
      assert.ok(
        CELLS.some((cell) => fileOf(cell) === file),
        `${file} runs a cell`,
      );
    }
    for (const cell of CELLS) assert.ok(files.includes(fileOf(cell)), `${labelOf(cell)}: ${fileOf(cell)} exists`);
  });

  it('has the Cluster column beside one server for every kind of relock\'s layout', () => {
    const kinds = new Set(CELLS.filter((cell) => cell.layout === 'relock' && cell.topology === 'server').map((cell) => cell.kind));
    for (const kind of kinds) assert.ok(CELLS.some((cell) => cell.kind === kind && cell.layout === 'relock' && cell.topology === 'cluster'), `${kind} on a Cluster`);
  });
});
