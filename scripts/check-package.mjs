// Checks the package as a user installs it: packs it into a temporary directory (so a tarball in
// the working tree is never written, overwritten or deleted), checks that every relative link of
// the README and the docs resolves in the repository and inside the tarball (check-links.mjs), then
// runs attw and publint on that same tarball.
// Run by `npm run check:package`, after the build.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkLinks } from './check-links.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The JavaScript file behind a dev dependency's bin, run with this Node (no shell, any platform). */
function bin(pkg, name) {
  const dir = join(root, 'node_modules', pkg);
  const field = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).bin;
  return join(dir, typeof field === 'string' ? field : field[name]);
}

function run(file, args, options = {}) {
  return execFileSync(process.execPath, [file, ...args], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], ...options });
}

const dir = mkdtempSync(join(tmpdir(), 'relock-pack-'));
try {
  // npm sets npm_execpath for the scripts it runs (another package manager sets its own: then, and
  // when run as `node scripts/check-package.mjs`, npm comes from the PATH).
  const npm = /npm-cli\.c?js$/.test(process.env.npm_execpath ?? '') ? process.env.npm_execpath : undefined;
  const packArgs = ['pack', '--json', '--pack-destination', dir];
  const json = npm
    ? run(npm, packArgs, { stdio: ['ignore', 'pipe', 'inherit'] })
    : execFileSync('npm', packArgs, { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], shell: process.platform === 'win32' });
  const [packed] = JSON.parse(json.toString());
  const tarball = join(dir, packed.filename);
  console.log(`packed ${packed.filename}: ${packed.files.length} files, ${packed.size} bytes (into a temporary directory)`);

  // The README is the package's front page on npm and in node_modules: its links, and those of the
  // pages it leads to, must resolve there as in the repository (scripts/check-links.mjs).
  if (![checkLinks(), checkLinks(tarball)].every(Boolean)) {
    throw new Error('Broken links (listed above): fix them, or add what they link to to "files" in package.json');
  }

  // attw colours its table even into a pipe: only a terminal gets colours.
  run(bin('@arethetypeswrong/cli', 'attw'), [tarball, ...(process.stdout.isTTY ? [] : ['--no-color'])]);
  // publint colours its output into a pipe too: NO_COLOR there (picocolors honours it).
  run(bin('publint', 'publint'), ['run', tarball], process.stdout.isTTY ? {} : { env: { ...process.env, NO_COLOR: '1' } });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
