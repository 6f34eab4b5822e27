// Inlines lua/<primitive>/*.lua into src/generated/<primitive>.ts, so the published bundle reads no
// files at run time. A script's line `-- @include <name>` is replaced by lua/<primitive>/<name>.lua.inc
// (without the include's header; an include may include lua/shared/ ones, each once per script);
// the SHA1 is of this expanded source, the one EVALSHA runs.
// Only *.lua files are scripts; *.lua.inc files are includes.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const luaDir = join(root, 'lua');

/**
 * The source of a script of lua/<primitive>/ with every `-- @include <name>` line replaced by
 * lua/<primitive>/<name>.lua.inc (`shared/<name>`: lua/shared/<name>.lua.inc), the include's opening
 * `--[[ ... ]]` header left out. A primitive's include may include shared ones; a shared one includes
 * nothing. Each include is expanded once per script, where it first appears (a second line naming it
 * is dropped: the locals it binds are in scope already). Throws on an unknown include, a malformed
 * marker, or a shared include that includes.
 * @param {string} primitive the folder under lua/, e.g. "fair-lock"
 * @param {string} source the script's source
 * @param {string} [file] the script's name, for error messages
 * @param {Set<string>} [seen] the includes expanded so far in this script
 * @returns {string}
 */
export function expandLua(primitive, source, file = '<source>', seen = new Set()) {
  return source.replace(/^[ \t]*--[ \t]*@include\b.*\n?/gm, (line) => {
    const match = /^-- @include ((?:shared\/)?[a-z][a-z0-9-]*)\n?$/.exec(line);
    const where = `lua/${primitive}/${file}`;
    if (!match) throw new Error(`${where}: malformed include line ${JSON.stringify(line.trimEnd())}: expected "-- @include <name>" alone on its line`);
    const include = match[1].startsWith('shared/') ? match[1] : `${primitive}/${match[1]}`;
    const path = join(luaDir, `${include}.lua.inc`);
    if (!existsSync(path)) throw new Error(`${where}: unknown include "${match[1]}": there is no lua/${include}.lua.inc`);
    if (seen.has(include)) return '';
    seen.add(include);
    const body = readFileSync(path, 'utf8').replace(/^--\[\[[\s\S]*?\]\]\n/, '');
    if (!/^[ \t]*--[ \t]*@include\b/m.test(body)) return body;
    if (include.startsWith('shared/')) throw new Error(`lua/${include}.lua.inc: a shared include includes nothing`);
    if (/^[ \t]*--[ \t]*@include (?!shared\/)/m.test(body)) throw new Error(`lua/${include}.lua.inc: an include may include shared ones only`);
    return expandLua(primitive, body, `${match[1]}.lua.inc`, seen);
  });
}

/**
 * `source` as it is sent to Redis: without comments (`-- ...` and `--[[ ... ]]`), without each line's
 * leading and trailing blanks, without empty lines. Quoted strings are kept as they are; a long
 * string (`[[ ... ]]`) outside a comment is refused (its lines must not be trimmed).
 * @param {string} source a script's source, includes expanded
 * @param {string} [where] the script, for error messages
 * @returns {string}
 */
export function stripLua(source, where = '<source>') {
  let out = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < source.length && source[j] !== c) {
        if (source[j] === '\\') j++;
        else if (source[j] === '\n') throw new Error(`${where}: unfinished string`);
        j++;
      }
      out += source.slice(i, j + 1);
      i = j + 1;
    } else if (source.startsWith('--', i)) {
      const long = /^--\[(=*)\[/.exec(source.slice(i, i + 64));
      if (long) {
        const close = `]${long[1]}]`;
        const end = source.indexOf(close, i);
        if (end < 0) throw new Error(`${where}: unfinished comment`);
        i = end + close.length;
      } else {
        const end = source.indexOf('\n', i);
        i = end < 0 ? source.length : end;
      }
    } else if (c === '[' && /^\[=*\[/.test(source.slice(i, i + 64))) {
      throw new Error(`${where}: a long string ([[ ... ]]) outside a comment: use a quoted string`);
    } else {
      out += c;
      i++;
    }
  }
  return out
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .join('\n');
}

function generate() {
  const outDir = join(root, 'src', 'generated');
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });

  // lua/shared/ holds includes only: it is no primitive.
  for (const primitive of readdirSync(luaDir).filter((dir) => dir !== 'shared').sort()) {
    const dir = join(luaDir, primitive);
    const entries = readdirSync(dir)
      .filter((file) => file.endsWith('.lua'))
      .sort()
      .map((file) => {
        const match = /^([a-z-]+?)-(\d+|n)\.lua$/.exec(file);
        if (!match) throw new Error(`lua/${primitive}/${file}: expected a name of the form verb-<numberOfKeys>.lua`);
        const [, verb, keys] = match;
        const source = stripLua(expandLua(primitive, readFileSync(join(dir, file), 'utf8'), file), `lua/${primitive}/${file}`);
        const sha1 = createHash('sha1').update(source).digest('hex');
        const camel = verb.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
        const numberOfKeys = keys === 'n' ? 'null' : keys;
        const path = JSON.stringify(`${primitive}/${file}`);
        return `export const ${camel} = {\n  file: ${path},\n  numberOfKeys: ${numberOfKeys},\n  sha1: ${JSON.stringify(sha1)},\n  source: ${JSON.stringify(source)},\n} as const;\n`;
      });
    writeFileSync(join(outDir, `${primitive}.ts`), `// Generated by scripts/gen-lua.mjs from lua/${primitive}/*.lua: do not edit.\n\n${entries.join('\n')}`);
  }
}

// Generates when run (`npm run gen`), not when imported for expandLua (the Lua tests).
if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) generate();
