// Starts link-proxy.ts in a process of its own in front of a Redis: the bench's clients then reach
// Redis over a link with a round trip of `rttMs` (issue 34 point 4).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const PROXY = fileURLToPath(new URL('./link-proxy.ts', import.meta.url));

/** What the proxy's own hop adds to the delay it is set to, as measured (said beside every figure over it). */
export const PROXY_HOP = 'its own hop adds to that: on the 2-core bench machine a PING through it, set to 0.5 ms, took 0.86 ms at the median against 0.06 ms direct, and more with many connections busy at once';

export interface Link {
  /** redis://127.0.0.1:<proxy port> */
  readonly url: string;
  readonly rttMs: number;
  close(): void;
}

/** The proxy in front of the Redis at `url`, once it listens. */
export function startLink(url: string, rttMs: number): Promise<Link> {
  const { hostname, port } = new URL(url);
  const child = spawn(process.execPath, ['--import', 'tsx', PROXY, hostname, port, String(rttMs)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.once('exit', (code) => reject(new Error(`link-proxy.ts exited with ${code} before listening`)));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /port (\d+)/.exec(out);
      if (!match) return;
      child.removeAllListeners('exit');
      resolve({ url: `redis://127.0.0.1:${match[1]}`, rttMs, close: () => void child.kill('SIGTERM') });
    });
  });
}
