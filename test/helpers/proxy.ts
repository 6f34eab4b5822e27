// A small TCP proxy for fault tests: it passes traffic, delays it per direction (order kept),
// black-holes it (a partition: nothing arrives, nothing is lost, pass() heals it) and cuts
// connections (both sides see the socket close).
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A delay in milliseconds, fixed or drawn per chunk from [minMs, maxMs]. */
export type Delay = number | { readonly minMs: number; readonly maxMs: number };

export interface Proxy {
  readonly host: string;
  readonly port: number;
  /** ioredis options that connect through the proxy. */
  readonly options: { readonly host: string; readonly port: number };
  /** Connections open through the proxy now. */
  readonly connections: number;
  /** Forwards everything as it comes: no delay, and whatever a black hole held is delivered now. */
  pass(): void;
  /** Delays each chunk, client to server by `upMs` and server to client by `downMs` (default: the same). */
  delay(upMs: Delay, downMs?: Delay): void;
  /** Holds every byte in both directions and opens no new upstream connection, until pass(). */
  blackhole(): void;
  /** Destroys every connection through the proxy; new ones are accepted as before. */
  cut(): void;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

interface Chunk {
  readonly data: Buffer;
  readonly at: number;
}

/** One direction of one connection: an ordered queue that the pump drains when chunks are due. */
class Pipe {
  readonly #queue: Chunk[] = [];
  #timer: NodeJS.Timeout | undefined;
  #lastAt = 0;
  #ended = false;

  constructor(
    readonly to: Socket,
    readonly state: { held: boolean; delay: () => number },
  ) {}

  push(data: Buffer): void {
    const at = Math.max(this.#lastAt, Date.now() + this.state.delay());
    this.#lastAt = at;
    this.#queue.push({ data, at });
    this.pump();
  }

  end(): void {
    this.#ended = true;
    this.pump();
  }

  pump(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.state.held || this.to.destroyed) return;
    const now = Date.now();
    while (this.#queue.length > 0 && this.#queue[0]!.at <= now) this.to.write(this.#queue.shift()!.data);
    if (this.#queue.length > 0) {
      this.#timer = setTimeout(() => this.pump(), this.#queue[0]!.at - now);
    } else if (this.#ended) {
      this.to.end();
    }
  }

  stop(): void {
    clearTimeout(this.#timer);
    this.#queue.length = 0;
  }
}

function draw(delay: Delay): number {
  if (typeof delay === 'number') return delay;
  return delay.minMs + Math.random() * (delay.maxMs - delay.minMs);
}

/** Starts a proxy on a free port of 127.0.0.1 that forwards to `target`. */
export async function startProxy(target: { readonly host: string; readonly port: number }): Promise<Proxy> {
  const state = { held: false, up: 0 as Delay, down: 0 as Delay };
  const sockets = new Set<Socket>();
  const clients = new Set<Socket>();
  const pipes = new Set<Pipe>();
  /** Client sockets accepted during a black hole, waiting for pass() to reach the server. */
  const parked: Array<() => void> = [];

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };

  const join = (client: Socket) => {
    if (client.destroyed) return;
    const server = connect(target.port, target.host);
    track(server);
    const up = new Pipe(server, { get held() { return state.held; }, delay: () => draw(state.up) });
    const down = new Pipe(client, { get held() { return state.held; }, delay: () => draw(state.down) });
    pipes.add(up).add(down);
    client.on('data', (data: Buffer) => up.push(data));
    server.on('data', (data: Buffer) => down.push(data));
    client.once('end', () => up.end());
    server.once('end', () => down.end());
    const teardown = () => {
      up.stop();
      down.stop();
      pipes.delete(up);
      pipes.delete(down);
      client.destroy();
      server.destroy();
    };
    client.once('close', teardown);
    server.once('close', teardown);
  };

  const listener: Server = createServer({ pauseOnConnect: true }, (client) => {
    track(client);
    clients.add(client);
    client.once('close', () => clients.delete(client));
    const go = () => {
      join(client);
      client.resume();
    };
    if (state.held) parked.push(go);
    else go();
  });
  await new Promise<void>((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(0, '127.0.0.1', () => resolve());
  });
  const address = listener.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const host = '127.0.0.1';

  return {
    host,
    port,
    options: { host, port },
    get connections() {
      return clients.size;
    },
    pass() {
      state.held = false;
      state.up = 0;
      state.down = 0;
      for (const pipe of pipes) pipe.pump();
      for (const go of parked.splice(0)) go();
    },
    delay(upMs, downMs = upMs) {
      state.up = upMs;
      state.down = downMs;
    },
    blackhole() {
      state.held = true;
    },
    cut() {
      for (const socket of sockets) socket.destroy();
    },
    async close() {
      state.held = false;
      parked.length = 0;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}
