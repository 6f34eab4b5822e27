// Issue 31, point 8: each guide's code is an example that CI runs. Every `ts` block of the guides
// is an excerpt, line for line, of an example file that `npm run examples` runs (and the packed
// run, from the tarball), so the guides cannot show code that does not run.
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe } from '../../helpers/describe.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const GUIDES: Record<string, readonly string[]> = {
  'docs/choosing-timeouts.md': ['examples/choosing-timeouts/main.ts', 'examples/express/main.ts'],
  'docs/migrating.md': ['examples/migrating/main.ts'],
  'docs/frameworks.md': ['examples/express/main.ts', 'examples/fastify/main.ts', 'examples/nestjs/main.ts'],
};
const runner = readFileSync(join(root, 'scripts', 'run-examples.mjs'), 'utf8');

/** Whether `block`'s lines appear one after another, indentation aside, in `source`. */
function excerptOf(block: string, source: string): boolean {
  const lines = source.split('\n').map((line) => line.trimEnd());
  const wanted = block.trimEnd().split('\n').map((line) => line.trimEnd());
  return lines.some((_, start) => wanted.every((line, i) => lines[start + i] === line));
}

describe('The guides', (it) => {
  for (const [guide, examples] of Object.entries(GUIDES)) {
    it(`${guide}: every ts block is an excerpt of an example that npm run examples runs`, () => {
      const text = readFileSync(join(root, guide), 'utf8');
      const blocks = [...text.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
      assert.ok(blocks.length > 0, `${guide} has ts blocks`);
      const sources = examples.map((file) => readFileSync(join(root, file), 'utf8'));
      for (const block of blocks) assert.ok(sources.some((source) => excerptOf(block, source)), `${guide}: this block is in none of ${examples.join(', ')}:\n${block}`);
      for (const file of examples) {
        assert.ok(runner.includes(`file: '${file.slice('examples/'.length)}'`), `scripts/run-examples.mjs runs ${file}`);
        assert.ok(text.includes(`](../${file.split('/').slice(0, -1).join('/')}`), `${guide} links to ${file}`);
      }
    });
  }
});
