// Checks every relative link of the Markdown pages: the file it names exists, and the #fragment, if
// any, names a heading (GitHub's slugs) or an <a id>/<a name> of that file.
//
//   node scripts/check-links.mjs                  the repository: README.md, CHANGELOG.md, docs/**/*.md
//   node scripts/check-links.mjs <dir>            an installed package (node_modules/relock) or an
//                                                 unpacked tarball: every .md file in it, and no link
//                                                 may leave the directory
//   node scripts/check-links.mjs <file.tgz>       a packed tarball, unpacked into a temporary directory
//
// check-package.mjs runs both checks on the tarball it packs; test/integration/testing/package.test.ts
// runs them too. Exits 1 and lists every broken link when there is one.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));

/** Markdown files under dir (skipping node_modules and dot-folders), as paths relative to root. */
function markdownUnder(root, dir = '') {
  const full = join(root, dir);
  if (!existsSync(full)) return [];
  return readdirSync(full, { withFileTypes: true }).flatMap((entry) => {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : markdownUnder(root, path);
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

/** The lines of a Markdown text outside fenced code blocks, with inline code spans blanked. */
function prose(text) {
  let fence;
  return text.split('\n').map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      return '';
    }
    if (marker) {
      fence = marker;
      return '';
    }
    return line.replace(/(`+)(?:(?!\1)[\s\S])*?\1/g, (span) => ' '.repeat(span.length));
  });
}

/** GitHub's anchor for a heading: its text as rendered, lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading) {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // HTML tags
    .replace(/`/g, '')
    .replace(/\*+|(^|\s)_+|_+(?=\s|$)/g, '$1') // emphasis markers
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

const anchorCache = new Map();

/** Every fragment a Markdown file answers to. */
function anchors(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const found = new Set();
  const seen = new Map();
  let fence;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence || marker) {
      if (!fence) fence = marker;
      else if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const base = slug(heading);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      found.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const match of line.matchAll(/<a\s[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) found.add(match[1]);
  }
  anchorCache.set(file, found);
  return found;
}

/** The link targets of a Markdown text: inline links and images, reference definitions, href/src. */
function links(text) {
  const found = [];
  prose(text).forEach((line, index) => {
    const at = index + 1;
    for (const match of line.matchAll(/\]\(\s*<?([^)\s>]*)>?(?:\s+["'(][^)]*)?\)/g)) found.push({ target: match[1], line: at });
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/.exec(line);
    if (definition) found.push({ target: definition[1], line: at });
    for (const match of line.matchAll(/<(?:a|img)\s[^>]*\b(?:href|src)\s*=\s*["']([^"']*)["']/gi)) found.push({ target: match[1], line: at });
  });
  return found;
}

/**
 * The broken relative links of the given Markdown files under root, as "file:line: target: why".
 * `confined`: a link may not point outside root (an installed package has nothing around it).
 */
export function brokenLinks(root, files, { confined = false } = {}) {
  const problems = [];
  for (const file of files) {
    const path = join(root, file);
    for (const { target, line } of links(readFileSync(path, 'utf8'))) {
      if (target === '' || /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // http:, mailto:...
      const where = `${file}:${line}: ${target}`;
      if (target.startsWith('/')) {
        problems.push(`${where}: absolute path (a relative link works in the repository and in the package)`);
        continue;
      }
      const [rawPath, fragment] = target.split('#', 2);
      const linked = rawPath ? resolve(dirname(path), decodeURIComponent(rawPath)) : path;
      const inside = relative(root, linked);
      if (confined && (inside.startsWith('..') || inside.startsWith(sep))) {
        problems.push(`${where}: points outside the package (to ${inside})`);
        continue;
      }
      if (!existsSync(linked)) {
        problems.push(`${where}: no such file (${inside.split(sep).join('/')})`);
        continue;
      }
      if (fragment && linked.endsWith('.md') && statSync(linked).isFile() && !anchors(linked).has(fragment.toLowerCase())) {
        problems.push(`${where}: no heading or anchor #${fragment} in ${inside.split(sep).join('/')}`);
      }
    }
  }
  return problems;
}

/** The repository's pages: README.md, CHANGELOG.md and everything under docs/. */
export function repositoryPages(root = repo) {
  return ['README.md', 'CHANGELOG.md', ...markdownUnder(root, 'docs')].filter((file) => existsSync(join(root, file)));
}

/** Unpacks a tarball into a new temporary directory; returns the package's root (its package/ folder). */
export function unpack(tarball) {
  const dir = mkdtempSync(join(tmpdir(), 'relock-links-'));
  execFileSync('tar', ['-xzf', tarball, '-C', dir], { stdio: 'inherit' });
  return { root: join(dir, 'package'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

function report(label, files, problems) {
  if (problems.length > 0) {
    console.error(`${label}: ${problems.length} broken link(s) in ${files.length} page(s):\n  ${problems.join('\n  ')}`);
    return false;
  }
  console.log(`${label}: every relative link of ${files.length} page(s) resolves`);
  return true;
}

/** Checks the repository's pages, or those of a package directory or tarball; true when all resolve. */
export function checkLinks(target) {
  if (!target) {
    const files = repositoryPages();
    return report('repository', files, brokenLinks(repo, files));
  }
  const unpacked = statSync(target).isFile() ? unpack(target) : undefined;
  try {
    const root = unpacked?.root ?? resolve(target);
    const files = markdownUnder(root);
    return report(unpacked ? `package (${target})` : `package (${root})`, files, brokenLinks(root, files, { confined: true }));
  } finally {
    unpacked?.remove();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ok = checkLinks(process.argv[2]);
  if (!ok) process.exitCode = 1;
}
