// How relock talks back: one line on stderr per event, and an exit code per failure kind.
import type { LockError } from '../errors.ts';
import { EXIT } from './usage.ts';

/** One line on stderr, marked as relock's (the command's own output shares the terminal). */
export function say(message: string): void {
  process.stderr.write(`relock: ${message}\n`);
}

/** The exit code for an error of relock or Redis (not the command's). */
export function exitCodeOf(error: unknown): number {
  switch ((error as LockError | undefined)?.code) {
    case 'ERR_LOCK_UNREACHABLE':
      return EXIT.unavailable;
    case 'ERR_LOCK_FORBIDDEN':
      return EXIT.forbidden;
    default:
      return EXIT.error;
  }
}

/** Closes the client, but never keeps relock from exiting for more than `ms` (a Redis gone silent). */
export async function closeWithin(client: { close(): Promise<void> }, ms = 2_000): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([client.close().catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
