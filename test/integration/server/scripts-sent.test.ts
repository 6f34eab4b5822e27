// What relock sends of its Lua (issue 31, point 4): every generated script, loaded into a real Redis,
// gets the SHA1 relock sends with EVALSHA (so EVALSHA finds what EVAL loaded), and carries no comment.
import * as assert from 'uvu/assert';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

const generatedDir = join(import.meta.dirname, '..', '..', '..', 'src', 'generated');

describe('the scripts relock sends', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  it('each loads into Redis under the SHA1 relock names it by, and has no comment', async () => {
    const scripts: { file: string; sha1: string; source: string }[] = [];
    for (const module of readdirSync(generatedDir)) {
      scripts.push(...(Object.values(await import(pathToFileURL(join(generatedDir, module)).href)) as typeof scripts));
    }
    assert.ok(scripts.length >= 30, `${scripts.length} scripts`);
    const redis = server.connect();
    try {
      for (const script of scripts) {
        assert.is(await redis.script('LOAD', script.source), script.sha1, script.file);
        assert.not.match(script.source, /--/, `${script.file} is sent without comments`);
      }
    } finally {
      redis.disconnect();
    }
  });
});
