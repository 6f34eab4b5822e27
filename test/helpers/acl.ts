// A least-privilege ACL user for relock, derived from what relock sends: the commands its Lua
// scripts call (read from lua/<primitive>/*.lua with their includes expanded), the few plain reads
// and the subscriber, its keys `~<prefix>:*` and its channels `&<prefix>:*`.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Redis } from 'ioredis';
import { applicableOnly, type It } from './describe.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * scripts/gen-lua.mjs's expansion: a script's source with each `-- @include <name>` line replaced by
 * lua/<primitive>/<name>.lua.inc (header left out), as the bundle inlines it and EVALSHA runs it.
 */
export const { expandLua, stripLua } = (await import(pathToFileURL(join(root, 'scripts', 'gen-lua.mjs')).href)) as {
  expandLua: (primitive: string, source: string, file?: string) => string;
  /** What is sent of an expanded source: no comments, indentation or empty lines. */
  stripLua: (source: string, where?: string) => string;
};

/** The source of the script `<primitive>/<file>` as the bundle has it: includes expanded. */
export function scriptSource(file: string): string {
  const [primitive, name] = file.split('/') as [string, string];
  return expandLua(primitive, readFileSync(join(root, 'lua', file), 'utf8'), name);
}

/** Every script under lua/, as `<primitive>/<file>` (*.lua; *.lua.inc are includes, not scripts). */
export function luaFiles(): string[] {
  return readdirSync(join(root, 'lua'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.lua'))
    .map((file) => file.split('\\').join('/'))
    .sort();
}

/** Commands relock's scripts call: every `rcall('X'` in lua/ (includes too), plus PUBLISH (its name comes in ARGV). */
export function scriptCommands(): string[] {
  const commands = new Set<string>(['publish']);
  for (const file of luaFiles()) {
    const source = scriptSource(file);
    for (const match of source.matchAll(/(?:rcall|redis\.call|redis\.pcall)\(\s*'([A-Za-z]+)'/g)) commands.add(match[1]!.toLowerCase());
  }
  return [...commands].sort();
}

/** Commands relock sends itself: scripts, the reads of isLocked/remainingTtlMs/holdCount, pub/sub. */
export const CLIENT_COMMANDS = ['evalsha', 'eval', 'type', 'pttl', 'hget', 'subscribe', 'unsubscribe'] as const;

/** Every command a relock user needs (CONFIG GET for the eviction check is optional: relock copes without it). */
export function relockCommands(): string[] {
  return [...new Set([...CLIENT_COMMANDS, ...scriptCommands()])].sort();
}

export interface AclUser {
  readonly username: string;
  readonly password: string;
  /** ioredis options for this user (INFO is not granted, so no ready check). */
  readonly options: { readonly username: string; readonly password: string; readonly enableReadyCheck: false };
}

/**
 * Creates (or resets) a user allowed only relock's commands, the keys `~<prefix>:*` and, unless
 * `channels` is false, the channels `&<prefix>:*`.
 */
/** Whether the server has channel rules in its ACL (`&pattern`, Redis 6.2): not the server matrix's Redis 6.0, where every user may use every channel. */
export const CHANNEL_ACL = process.env.RELOCK_SERVER !== 'redis-6.0';

/** `it` for a test of channel permissions: listed as not applicable on a server without channel rules. */
export function channelAclOnly(it: It): (name: string, body: () => void | Promise<void>, limitMs?: number) => void {
  return applicableOnly(it, CHANNEL_ACL, 'channel rules in the ACL');
}

export async function createRelockUser(admin: Redis, username: string, options: { prefix?: string; channels?: boolean } = {}): Promise<AclUser> {
  const prefix = options.prefix ?? 'relock';
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  await admin.call(
    'ACL',
    'SETUSER',
    username,
    'reset',
    'on',
    `>${password}`,
    `~${prefix}:*`,
    ...(options.channels === false || !CHANNEL_ACL ? [] : [`&${prefix}:*`]),
    '-@all',
    ...relockCommands().map((command) => `+${command}`),
  );
  return { username, password, options: { username, password, enableReadyCheck: false } };
}
