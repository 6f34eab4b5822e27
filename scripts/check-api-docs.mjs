// Checks that docs/reference/ (the API reference TypeDoc generates from the TSDoc, `npm run docs:api`)
// is what the sources give today: generates it into a temporary directory with the same settings
// (typedoc.json: any TypeDoc warning, such as an exported name without documentation, is an error)
// and compares file by file. Run by `npm run docs:api:check`, after `npm run gen`.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const checkedIn = join(root, 'docs', 'reference');

function filesUnder(dir, prefix = '') {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`],
  );
}

const dir = mkdtempSync(join(tmpdir(), 'relock-api-'));
try {
  const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
  try {
    execFileSync(process.execPath, [typedoc, '--out', dir, '--logLevel', 'Warn'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  } catch {
    throw new Error('TypeDoc failed (its warnings, listed above, are errors here: document every exported name)');
  }
  const fresh = new Set(filesUnder(dir));
  const old = new Set(filesUnder(checkedIn));
  const added = [...fresh].filter((file) => !old.has(file));
  const removed = [...old].filter((file) => !fresh.has(file));
  const changed = [...fresh].filter((file) => old.has(file) && readFileSync(join(dir, file), 'utf8') !== readFileSync(join(checkedIn, file), 'utf8'));
  if (added.length + removed.length + changed.length > 0) {
    const list = (label, files) => (files.length > 0 ? [`${label}: ${files.join(', ')}`] : []);
    throw new Error(
      [
        'docs/reference/ is out of date with the sources: run `npm run docs:api` and commit the result.',
        ...list('  missing', added),
        ...list('  no longer generated', removed),
        ...list('  different', changed),
      ].join('\n'),
    );
  }
  console.log(`docs/reference/: ${fresh.size} files, up to date with the sources`);
} catch (error) {
  console.error(error.message);
  process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
