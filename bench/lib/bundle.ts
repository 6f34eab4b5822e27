// relock's ESM build copied where a bench's workers load it: dist/ is several files (index.mjs,
// otel.mjs, testing.mjs and the chunks they share), so the copy is the whole folder's modules, and a
// rebuild during the run (which empties dist/) cannot pull them from under the workers.
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Copies the ES modules of the build in `dist` (with its chunks/) to `to`; returns the URL of `to`'s `entry` (index.mjs by default). */
export function copyBuild(dist: string, to: string, entry = 'index.mjs'): string {
  if (!existsSync(join(dist, entry))) throw new Error(`${join(dist, entry)} is missing: run \`npm run build\` at the root first (\`npm run bench\` does)`);
  rmSync(to, { recursive: true, force: true });
  cpSync(dist, to, { recursive: true, filter: (source) => !/\.(c|d\.)[mc]?ts$|\.cjs$|\.map$/.test(source) });
  return pathToFileURL(join(to, entry)).href;
}
