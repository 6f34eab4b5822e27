import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expandLua, luaFiles, scriptSource, stripLua } from '../helpers/acl.ts';
import { describe } from '../helpers/describe.ts';

// Every check of a script's body reads it as the bundle has it: `-- @include` lines expanded.
const dir = join(import.meta.dirname, '..', '..', 'lua');
const files = luaFiles();
const generatedDir = join(import.meta.dirname, '..', '..', 'src', 'generated');
const generated: { file: string; sha1: string; source: string }[] = [];
for (const module of readdirSync(generatedDir)) {
  generated.push(...(Object.values(await import(pathToFileURL(join(generatedDir, module)).href)) as { file: string; sha1: string; source: string }[]));
}

function parse(source: string) {
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(source)?.[1] ?? '';
  const body = source.slice(source.indexOf(']]') + 2);
  const indexes = (text: string, name: 'KEYS' | 'ARGV') => [...text.matchAll(new RegExp(`${name}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]));
  return { header, body, indexes };
}

describe('lua/<primitive>/*.lua', (it) => {
  it('finds the lock\'s five scripts and its three quorum scripts, each named verb-<numberOfKeys>.lua', () => {
    assert.equal(
      files.filter((file) => file.startsWith('lock/')),
      [
        'lock/acquire-2.lua',
        'lock/force-release-2.lua',
        'lock/quorum-acquire-2.lua',
        'lock/quorum-fence-up-2.lua',
        'lock/quorum-rollback-1.lua',
        'lock/reenter-2.lua',
        'lock/release-2.lua',
        'lock/renew-n.lua',
      ],
    );
    for (const file of files) assert.match(file, /^[a-z-]+\/[a-z-]+-(\d+|n)\.lua$/);
  });

  it('finds the fair lock\'s six scripts and its four of the Redisson layout', () => {
    assert.equal(
      files.filter((file) => file.startsWith('fair-lock/')),
      [
        'fair-lock/acquire-4.lua',
        'fair-lock/confirm-2.lua',
        'fair-lock/force-release-4.lua',
        'fair-lock/heartbeat-4.lua',
        'fair-lock/leave-4.lua',
        'fair-lock/redisson-acquire-4.lua',
        'fair-lock/redisson-force-release-4.lua',
        'fair-lock/redisson-leave-4.lua',
        'fair-lock/redisson-release-4.lua',
        'fair-lock/release-4.lua',
      ],
    );
  });

  it('gives every fair-lock script that grants grantNext from one include, bound to the locals it expects', () => {
    const granting = ['acquire-4', 'force-release-4', 'heartbeat-4', 'leave-4', 'release-4'];
    const include = readFileSync(join(dir, 'fair-lock', 'grant-next.lua.inc'), 'utf8');
    const { header } = parse(include);
    assert.ok(header.includes('Defines:') && header.includes('Expects in scope'), 'grant-next.lua.inc opens with what it defines and expects');
    const expects = new Map(
      [...header.slice(header.indexOf('Expects in scope')).matchAll(/^\s+(\w+)\s+(redis\.call|(?:KEYS|ARGV)\[\d+\])/gm)].map((m) => [m[1]!, m[2]!]),
    );
    assert.equal([...expects.keys()].sort(), ['claimMs', 'deadlinesKey', 'fenceKey', 'fenceTtlMs', 'grantPrefix', 'lockKey', 'publishCommand', 'queueKey', 'rcall']);
    for (const file of files.filter((file) => file.startsWith('fair-lock/'))) {
      const raw = readFileSync(join(dir, file), 'utf8');
      const markers = raw.split('\n').filter((line) => line.includes('@include'));
      const expanded = scriptSource(file);
      const definitions = expanded.split('local function grantNext(').length - 1;
      if (!granting.some((name) => file === `fair-lock/${name}.lua`)) {
        // confirm-2 keeps the fence alive by the shared fence rule, and grants nothing; the Redisson
        // layout's scripts grant nothing either (RFairLock's head takes the lock itself).
        const redisson = {
          'fair-lock/redisson-acquire-4.lua': ['-- @include redisson-prune', '-- @include shared/fence'],
          'fair-lock/redisson-release-4.lua': ['-- @include redisson-prune', '-- @include shared/release-level'],
        }[file] ?? ['-- @include redisson-prune'];
        assert.equal(markers, file === 'fair-lock/confirm-2.lua' ? ['-- @include shared/fence'] : file.startsWith('fair-lock/redisson-') ? redisson : [], `${file} includes no grant`);
        assert.is(definitions, 0, `${file} has no grantNext`);
        continue;
      }
      // release-4 takes the nested-release rule from its shared include too; every one the fence rule.
      const shared = file === 'fair-lock/release-4.lua' ? ['-- @include shared/release-level'] : [];
      assert.equal(markers, [...shared, '-- @include shared/fence', '-- @include grant-next'], `${file} includes the fence rule and grant-next exactly once`);
      assert.not.ok(/local function (readFence|nextToken)\(/.test(readFileSync(join(dir, 'fair-lock', 'grant-next.lua.inc'), 'utf8')), 'no fence rule of its own');
      assert.is(definitions, 1, `${file}: one grantNext, from the include`);
      const bound = new Map<string, string>();
      for (const [, names, values] of raw.slice(0, raw.indexOf(markers.at(-1)!)).matchAll(/^local ([\w, ]+?) = (.+)$/gm)) {
        const list = values!.split(', ');
        names!.split(', ').forEach((name, i) => bound.set(name, list[i]!));
      }
      for (const [name, value] of expects) assert.is(bound.get(name), value, `${file} binds ${name} to ${value} before the include`);
    }
  });

  it('fails the build on an unknown or malformed include', () => {
    assert.throws(() => expandLua('fair-lock', 'local x = 1\n-- @include no-such-block\n', 'x-1.lua'), /x-1\.lua: unknown include "no-such-block"/);
    assert.throws(() => expandLua('fair-lock', '  -- @include grant-next\n', 'x-1.lua'), /malformed include line/);
  });

  it("expands a shared include inside a primitive's include, once per script", () => {
    const reads = (lua: string) => (lua.match(/rcall\('TIME'\)/g) ?? []).length;
    // quorum-slots includes shared/now; the script's own line for it, first or after, adds no second read.
    assert.is(reads(expandLua('semaphore', '-- @include quorum-slots\n')), 1);
    assert.is(reads(expandLua('semaphore', '-- @include shared/now\n-- @include quorum-slots\n-- @include shared/now\n')), 1);
    assert.is(reads(expandLua('semaphore', '-- @include prune\n-- @include quorum-slots\n')), 1);
  });

  it('strips comments, indentation and empty lines, and keeps quoted strings whole', () => {
    const lua = "--[[ header\n-- ]]\nlocal a = '--not a comment' -- a comment\n\n  if a then --[==[ long\n]] ]==] return \"x\\\"--\" end\n";
    assert.is(stripLua(lua), "local a = '--not a comment'\nif a then  return \"x\\\"--\" end");
    assert.throws(() => stripLua('local s = [[\n  text]]', 'x-1.lua'), /x-1\.lua: a long string/);
    assert.throws(() => stripLua("local s = 'open\n", 'x-1.lua'), /x-1\.lua: unfinished string/);
  });

  for (const file of files) {
    const source = scriptSource(file);
    const { header, body, indexes } = parse(source);
    const keys = file.match(/-(\d+|n)\.lua$/)![1]!;

    it(`${file} opens with an Input/Output header`, () => {
      assert.ok(header.includes('Input:'), 'Input section');
      assert.ok(header.includes('Output:'), 'Output section');
    });

    it(`${file} documents every KEYS and ARGV index it reads, and reads every one it documents`, () => {
      if (keys === 'n') {
        assert.ok(/KEYS\[1\.\.n\]/.test(header), 'a batch script documents KEYS[1..n]');
        assert.ok(/ipairs\(KEYS\)/.test(body), 'and walks KEYS');
        return;
      }
      const documentedKeys = new Set(indexes(header, 'KEYS'));
      const usedKeys = new Set(indexes(body, 'KEYS'));
      assert.equal([...usedKeys].sort(), [...documentedKeys].sort());
      assert.is(Math.max(...usedKeys), Number(keys), 'highest KEYS index = the number in the file name');
      assert.equal([...new Set(indexes(body, 'ARGV'))].sort(), [...new Set(indexes(header, 'ARGV'))].sort());
    });

    it(`${file} binds KEYS and ARGV to named locals and uses rcall`, () => {
      assert.ok(/local rcall = redis\.call/.test(body));
      const afterBindings = body.split('\n').filter((line) => !/^local .*(KEYS|ARGV)\[/.test(line) && !/^\s*--/.test(line));
      const stray = afterBindings.filter((line) => /(KEYS|ARGV)\[\d+\]/.test(line) && !/ARGV\[i \+ 1\]/.test(line));
      assert.equal(stray, [], 'KEYS/ARGV read only in the bindings');
      assert.not.ok(/redis\.call\(/.test(body.replace('local rcall = redis.call', '')), 'redis.call only through rcall');
    });

    it(`${file} has no commented-out Lua`, () => {
      const comments = body.split('\n').filter((line) => /^\s*--/.test(line));
      assert.equal(comments.filter((line) => /rcall\(|return |local |end$/.test(line)), []);
    });

    it(`${file} is inlined into the bundle, includes expanded, without comments or indentation, with the SHA1 of what is sent`, () => {
      const script = generated.find((s) => s.file === file);
      assert.ok(script, 'generated');
      assert.is(script!.source, stripLua(source));
      assert.not.match(script!.source, /--|^\s|\s$|\n\n/m, 'no comment, no leading or trailing blank, no empty line');
      assert.ok(script!.source.length < source.length);
      assert.is(script!.sha1, createHash('sha1').update(script!.source).digest('hex'));
    });
  }

  it('publishes through a command name given in ARGV, so sharded pub/sub can be switched on', () => {
    for (const file of ['lock/release-2.lua', 'lock/force-release-2.lua']) {
      const { body } = parse(scriptSource(file));
      assert.ok(/rcall\(publishCommand, channel/.test(body), file);
      assert.not.ok(/'publish'/i.test(body), file);
    }
    for (const file of files.filter((file) => file.startsWith('fair-lock/') && file.endsWith('-4.lua') && !file.includes('redisson-'))) {
      const { body } = parse(scriptSource(file));
      assert.ok(/rcall\(publishCommand, grantPrefix \.\. /.test(body), file);
      assert.not.ok(/'s?publish'/i.test(body), file);
    }
    // The Redisson layout's fair lock wakes a head on its own channel (redisson-prune's wakeHead).
    for (const file of ['fair-lock/redisson-release-4.lua', 'fair-lock/redisson-leave-4.lua', 'fair-lock/redisson-force-release-4.lua']) {
      const { body } = parse(scriptSource(file));
      assert.ok(/rcall\(publishCommand, channelBase \.\. ':' \.\. head/.test(body) && /wakeHead\(\)\n/.test(body), file);
      assert.not.ok(/'s?publish'/i.test(body), file);
    }
  });
});
