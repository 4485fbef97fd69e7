/**
 * Bounded work at the front door. node:http parses pipelined requests ahead and emits each at once (it only orders
 * the answers), so 20,000 requests written on one keep-alive connection would start 20,000 invocations together.
 * ConnectionTurns lets each connection run `maxInFlight` of its requests at a time (Kestrel, the host's server, runs
 * one), and stops reading a connection whose waiting requests reach `backlog`. RequestThrottle is the host's HTTP
 * throttle (host.json extensions.http.maxConcurrentRequests / maxOutstandingRequests) over all connections.
 */

/** What ConnectionTurns needs of a socket (a net.Socket; tests pass a stand-in). */
export interface PausableSocket {
  pause(): unknown;
  resume(): unknown;
}

interface Turns {
  running: number;
  waiting: (() => void)[];
  /** This gate paused the socket (node:http pauses and resumes it for its own reasons too). */
  paused: boolean;
}

/** Releases a slot; calling it again does nothing. */
export type Release = () => void;

function once(fn: () => void): Release {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}

export class ConnectionTurns {
  readonly #turns = new WeakMap<PausableSocket, Turns>();
  readonly #maxInFlight: number;
  readonly #backlog: number;

  constructor(maxInFlight: number, backlog: number) {
    this.#maxInFlight = maxInFlight;
    this.#backlog = backlog;
  }

  /** Resolves once the request may run on its connection; release when it is done (answered or abandoned). */
  async enter(socket: PausableSocket): Promise<Release> {
    let t = this.#turns.get(socket);
    if (!t) {
      t = { running: 0, waiting: [], paused: false };
      this.#turns.set(socket, t);
    }
    const turns = t;
    if (turns.running < this.#maxInFlight) {
      turns.running++;
    } else {
      await new Promise<void>((resolve) => {
        turns.waiting.push(resolve);
        if (turns.waiting.length >= this.#backlog && !turns.paused) {
          turns.paused = true;
          socket.pause();
        }
      });
    }
    return once(() => {
      const next = turns.waiting.shift();
      if (next)
        next(); // the slot passes on: running stays the same
      else turns.running--;
      if (turns.paused && turns.waiting.length <= Math.floor(this.#backlog / 2)) {
        turns.paused = false;
        socket.resume();
      }
    });
  }

  /** Requests of this connection running and waiting (for tests and diagnostics). */
  load(socket: PausableSocket): { running: number; waiting: number; paused: boolean } {
    const t = this.#turns.get(socket);
    return { running: t?.running ?? 0, waiting: t?.waiting.length ?? 0, paused: t?.paused ?? false };
  }
}

/** At most `maxConcurrent` running and `maxOutstanding` running or waiting (Infinity = unbounded). */
export class RequestThrottle {
  readonly maxConcurrent: number;
  readonly maxOutstanding: number;
  #running = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(maxConcurrent: number, maxOutstanding: number) {
    this.maxConcurrent = maxConcurrent;
    this.maxOutstanding = maxOutstanding;
  }

  get running(): number {
    return this.#running;
  }

  get waiting(): number {
    return this.#waiting.length;
  }

  /** A slot (once one is free), or undefined when `maxOutstanding` requests are already running or waiting: 429. */
  tryEnter(): Promise<Release> | undefined {
    if (this.#running + this.#waiting.length >= this.maxOutstanding) return undefined;
    const release = once(() => {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    });
    if (this.#running < this.maxConcurrent) {
      this.#running++;
      return Promise.resolve(release);
    }
    return new Promise((resolve) => this.#waiting.push(() => resolve(release)));
  }
}
