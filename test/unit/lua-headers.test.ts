import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { luaFiles } from '../helpers/acl.ts';
import { describe } from '../helpers/describe.ts';

const dir = join(import.meta.dirname, '..', '..', 'lua');
const files = luaFiles();
const generatedDir = join(import.meta.dirname, '..', '..', 'src', 'generated');
const generated: { file: string; source: string }[] = [];
for (const module of readdirSync(generatedDir)) {
  generated.push(...(Object.values(await import(pathToFileURL(join(generatedDir, module)).href)) as { file: string; source: string }[]));
}

function parse(source: string) {
  const header = /^--\[\[([\s\S]*?)\]\]/.exec(source)?.[1] ?? '';
  const body = source.slice(source.indexOf(']]') + 2);
  const indexes = (text: string, name: 'KEYS' | 'ARGV') => [...text.matchAll(new RegExp(`${name}\\[(\\d+)\\]`, 'g'))].map((m) => Number(m[1]));
  return { header, body, indexes };
}

describe('lua/<primitive>/*.lua', (it) => {
  it('finds the lock\'s five scripts, each named verb-<numberOfKeys>.lua', () => {
    assert.equal(
      files.filter((file) => file.startsWith('lock/')),
      ['lock/acquire-2.lua', 'lock/force-release-2.lua', 'lock/reenter-2.lua', 'lock/release-2.lua', 'lock/renew-n.lua'],
    );
    for (const file of files) assert.match(file, /^[a-z-]+\/[a-z-]+-(\d+|n)\.lua$/);
  });

  it('finds the fair lock\'s eight scripts', () => {
    assert.equal(
      files.filter((file) => file.startsWith('fair-lock/')),
      [
        'fair-lock/acquire-4.lua',
        'fair-lock/confirm-2.lua',
        'fair-lock/force-release-4.lua',
        'fair-lock/heartbeat-4.lua',
        'fair-lock/leave-4.lua',
        'fair-lock/reenter-2.lua',
        'fair-lock/release-4.lua',
        'fair-lock/renew-n.lua',
      ],
    );
  });

  it('gives every fair-lock script that grants the same grantNext, token rule and key/ARGV bindings', () => {
    const granting = ['acquire-4', 'force-release-4', 'heartbeat-4', 'leave-4', 'release-4'];
    const shared = (file: string) => {
      const { body } = parse(readFileSync(join(dir, 'fair-lock', `${file}.lua`), 'utf8'));
      const from = body.indexOf('local time, nowMs, lastToken');
      const to = body.indexOf('\n  return nil\nend\n', body.indexOf('local function grantNext()', from));
      assert.ok(from > 0 && to > from, `${file}: the grantNext block`);
      const bindings = body.split('\n').slice(1, 3).join('\n');
      return { block: body.slice(from, to), bindings };
    };
    const first = shared(granting[0]!);
    for (const file of granting.slice(1)) {
      const other = shared(file);
      assert.is(other.block, first.block, `${file}: grantNext differs from acquire-4.lua's`);
      assert.is(other.bindings, first.bindings, `${file}: KEYS[1..4] and ARGV[1..4] bound as in acquire-4.lua`);
    }
  });

  for (const file of files) {
    const source = readFileSync(join(dir, file), 'utf8');
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

    it(`${file} is inlined into the bundle with its SHA1`, () => {
      const script = generated.find((s) => s.file === file);
      assert.ok(script, 'generated');
      assert.is(script!.source, source);
    });
  }

  it('publishes through a command name given in ARGV, so sharded pub/sub can be switched on', () => {
    for (const file of ['lock/release-2.lua', 'lock/force-release-2.lua']) {
      const { body } = parse(readFileSync(join(dir, file), 'utf8'));
      assert.ok(/rcall\(publishCommand, channel/.test(body), file);
      assert.not.ok(/'publish'/i.test(body), file);
    }
    for (const file of files.filter((file) => file.startsWith('fair-lock/') && file.endsWith('-4.lua'))) {
      const { body } = parse(readFileSync(join(dir, file), 'utf8'));
      assert.ok(/rcall\(publishCommand, grantPrefix \.\. /.test(body), file);
      assert.not.ok(/'s?publish'/i.test(body), file);
    }
  });
});
