// The rules of the house (../shared/ARCHITECTURE.md, docs/design.md "The house"), checked on the
// import lines of src/: a new import that breaks one fails here, naming the file and the rule.
//
// Rules:
// - only src/port/ imports a Redis client library (types included: the published types must not need one);
// - port/ is the bottom: it imports nothing of runtime/, topology/ or a primitive;
// - runtime/ knows no primitive and no topology;
// - topology/ knows no primitive;
// - a primitive knows neither the topology it runs on nor the client (no topology/, no port/);
// - kinds/ wires kinds to columns (relock's layout, Redisson's, the quorum): only client.ts imports it.
//
// DEBT lists the imports that break a rule today (issue 33 removes them): each must still be there,
// so the list only shrinks, and nothing else may break a rule.
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { describe } from '../helpers/describe.ts';

const src = join(import.meta.dirname, '..', '..', 'src');
const PRIMITIVES = ['lock', 'fair-lock', 'rw-lock', 'semaphore', 'multi-lock', 'latch', 'job', 'leader'];
const CLIENT_LIBRARIES = /^(ioredis|iovalkey|redis|@redis\/.*|@valkey\/valkey-glide)$/;

/** `file -> target` of an import that breaks a rule today; `target` is a folder of src/ or a package. */
const DEBT = new Set<string>([
  // The quorum's own implementations of each kind's commands, over topology/quorum.ts (point 2 of
  // issue 33: the quorum as a script target behind the one-server runner's run()).
  'fair-lock/quorum.ts -> topology',
  'lock/quorum-commands.ts -> topology',
  'lock/quorum.ts -> topology',
  'rw-lock/quorum-commands.ts -> topology',
  'rw-lock/quorum.ts -> topology',
  'semaphore/quorum-commands.ts -> topology',
  'semaphore/quorum.ts -> topology',
]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'generated' ? [] : sources(path);
    return entry.endsWith('.ts') ? [path] : [];
  });
}

/** The modules a source file imports: its import and export-from statements, and import() types and calls (comments and strings aside). */
export function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const statements = [...code.matchAll(/^(?:import|export)\b[^;'"`]*?(?:from\s+)?['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
  const dynamic = [...code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1]!);
  return [...statements, ...dynamic];
}

/** `file -> target` for every import of src/ across folders or of a package, deduplicated. */
function edges(): { file: string; target: string }[] {
  const found = new Map<string, { file: string; target: string }>();
  for (const path of sources(src)) {
    const file = relative(src, path).split(sep).join('/');
    const folder = file.includes('/') ? file.split('/')[0]! : '.';
    for (const spec of importsOf(readFileSync(path, 'utf8'))) {
      let target: string;
      if (spec.startsWith('.')) {
        const to = relative(src, join(dirname(path), spec)).split(sep).join('/');
        target = to.includes('/') ? to.split('/')[0]! : '.';
        if (target === folder) continue;
      } else if (spec.startsWith('node:')) continue;
      else target = spec;
      found.set(`${file} -> ${target}`, { file, target });
    }
  }
  return [...found.values()];
}

/** The rule an import breaks, or undefined. */
function broken(file: string, target: string): string | undefined {
  const folder = file.includes('/') ? file.split('/')[0]! : '.';
  if (CLIENT_LIBRARIES.test(target) && folder !== 'port') return 'only src/port/ imports a Redis client library';
  if (folder === 'port' && (target === 'runtime' || target === 'topology' || PRIMITIVES.includes(target))) return 'port/ imports nothing above it';
  if (folder === 'runtime' && (target === 'topology' || PRIMITIVES.includes(target))) return 'runtime/ knows no primitive and no topology';
  if (folder === 'topology' && PRIMITIVES.includes(target)) return 'topology/ knows no primitive';
  if (PRIMITIVES.includes(folder) && (target === 'topology' || target === 'port')) return 'a primitive knows neither its topology nor its client';
  if (target === 'kinds' && file !== 'client.ts') return 'only client.ts imports kinds/';
  return undefined;
}

describe('The house: imports across src/ folders', (it) => {
  it('reads import lines, not comments or strings', () => {
    const source = [
      "// import { x } from 'ioredis';",
      "import type { A } from './a.ts';",
      "import {\n  b,\n  c,\n} from '../runtime/b.ts';",
      "export { d } from './d.ts';",
      "import './side-effect.ts';",
      "const message = \"as `import Redis from 'ioredis'` gives it\";",
      "let loaded: typeof import('iovalkey') | undefined;",
    ].join('\n');
    assert.equal(importsOf(source), ['./a.ts', '../runtime/b.ts', './d.ts', './side-effect.ts', 'iovalkey']);
  });

  it('finds the imports it judges (the checker can see a break)', () => {
    const all = edges();
    assert.ok(all.some(({ file, target }) => file.startsWith('port/') && CLIENT_LIBRARIES.test(target)), 'port/ imports a client library');
    assert.ok(all.some(({ file, target }) => file.startsWith('lock/') && target === 'runtime'), 'lock/ imports runtime/');
    assert.is(broken('runtime/x.ts', 'semaphore'), 'runtime/ knows no primitive and no topology');
    assert.is(broken('lock/x.ts', 'ioredis'), 'only src/port/ imports a Redis client library');
    assert.is(broken('lock/x.ts', 'runtime'), undefined);
    assert.is(broken('lock/x.ts', 'kinds'), 'only client.ts imports kinds/');
    assert.is(broken('kinds/relock.ts', 'lock'), undefined);
  });

  it('breaks no rule beyond the listed debt, and every listed debt is still there (the list only shrinks)', () => {
    const breaks = edges().flatMap(({ file, target }) => {
      const rule = broken(file, target);
      return rule ? [{ edge: `${file} -> ${target}`, rule }] : [];
    });
    const fresh = breaks.filter(({ edge }) => !DEBT.has(edge)).map(({ edge, rule }) => `${edge}: ${rule}`);
    assert.equal(fresh, [], 'imports that break a rule of the house');
    const paid = [...DEBT].filter((edge) => !breaks.some((b) => b.edge === edge));
    assert.equal(paid, [], 'debts no longer there: remove them from DEBT');
  });
});
