/**
 * Bounded work at the front door. node:http parses pipelined requests ahead and emits each at once (it only orders
 * the answers), so 20,000 requests written on one keep-alive connection would start 20,000 invocations together.
 * ConnectionTurns lets each connection run `maxInFlight` of its requests at a time (Kestrel, the host's server, runs
 * one), and stops reading a connection whose waiting requests reach `backlog`. RequestThrottle is the host's HTTP
 * throttle (host.json extensions.http.maxConcurrentRequests / maxOutstandingRequests) over all connections.
 */

/**
 * What ConnectionTurns needs of a socket (a net.Socket of a node:http server; tests pass a stand-in). `socket.pause()`
 * alone does not stop node:http from reading: its parser consumes the socket's handle directly, and each request
 * body read (`IncomingMessage._read`) or answer (`req._dump()`) resumes the socket. node:http's own guard against a
 * flood of pipelined requests (`parserOnIncoming`, when answers pile up unsent) sets `_paused`, which those resumes
 * respect, and pauses `parser` once the current buffer is parsed; `socketOnDrain` undoes both — on every answer
 * written while few answers are unsent. The same two fields are used here, the same way, and the pause is set again
 * after each answer for as long as the backlog has not halved (in the same tick as node:http's resume, before any
 * read: libuv reads in its poll phase).
 */
export interface PausableSocket {
  pause(): unknown;
  resume(): unknown;
  _paused?: boolean;
  parser?: { pause(): unknown; resume(): unknown } | null;
}

interface Turns {
  running: number;
  waiting: (() => void)[];
  /** This connection is not to be read until its backlog has halved. */
  holding: boolean;
}

function stopReading(socket: PausableSocket): void {
  socket._paused = true;
  socket.pause(); // node:http pauses the parser after the buffer it is parsing (onParserExecuteCommon)
}

function readAgain(socket: PausableSocket): void {
  socket._paused = false;
  socket.parser?.resume();
  socket.resume();
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
      t = { running: 0, waiting: [], holding: false };
      this.#turns.set(socket, t);
    }
    const turns = t;
    if (turns.running < this.#maxInFlight) {
      turns.running++;
    } else {
      await new Promise<void>((resolve) => {
        turns.waiting.push(resolve);
        if (turns.waiting.length >= this.#backlog && !turns.holding) {
          turns.holding = true;
          stopReading(socket);
        }
      });
    }
    return once(() => {
      const next = turns.waiting.shift();
      if (next)
        next(); // the slot passes on: running stays the same
      else turns.running--;
      if (!turns.holding) return;
      if (turns.waiting.length <= Math.floor(this.#backlog / 2)) {
        turns.holding = false;
        readAgain(socket);
      } else stopReading(socket); // again: the answer just written may have made node:http resume reading
    });
  }

  /** Requests of this connection running and waiting (for tests and diagnostics). */
  load(socket: PausableSocket): { running: number; waiting: number; paused: boolean } {
    const t = this.#turns.get(socket);
    return { running: t?.running ?? 0, waiting: t?.waiting.length ?? 0, paused: t?.holding ?? false };
  }
}

/**
 * A request admitted by RequestThrottle (it counts as outstanding) that does not run yet: it may read its body
 * first, then take a slot, or leave without running (refused, client gone).
 */
export interface Admission {
  /** Resolves once a slot is free (at once when one is); release it when done. */
  slot(): Promise<Release>;
  /** Gives the admission up without running (calling it after slot() does nothing). */
  leave(): void;
}

/**
 * At most `maxConcurrent` running and `maxOutstanding` admitted — running, waiting for a slot, or reading their body
 * before they ask for one — (Infinity = unbounded). Bodies are read before a slot is taken: a slow client must not
 * hold one of the `maxConcurrent` slots while its bytes trickle in.
 */
export class RequestThrottle {
  readonly maxConcurrent: number;
  readonly maxOutstanding: number;
  #running = 0;
  /** Admitted and not running: waiting for a slot or not asking yet. */
  #admitted = 0;
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

  /** Admitted requests that do not run yet (reading their body, or waiting for a slot). */
  get admitted(): number {
    return this.#admitted;
  }

  /** A slot (once one is free), or undefined when `maxOutstanding` requests are already running or waiting: 429. */
  tryEnter(): Promise<Release> | undefined {
    return this.tryAdmit()?.slot();
  }

  /** An admission, or undefined when `maxOutstanding` requests are already admitted or running: 429. */
  tryAdmit(): Admission | undefined {
    if (this.#running + this.#admitted >= this.maxOutstanding) return undefined;
    this.#admitted++;
    let settled = false;
    const release = once(() => {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    });
    const leave = () => {
      if (settled) return;
      settled = true;
      this.#admitted--;
    };
    return {
      leave,
      slot: () => {
        if (settled) return Promise.resolve(() => {});
        if (this.#running < this.maxConcurrent && this.#waiting.length === 0) {
          leave();
          this.#running++;
          return Promise.resolve(release);
        }
        return new Promise((resolve) =>
          this.#waiting.push(() => {
            leave(); // the slot passes on from the request that released it: running stays the same
            resolve(release);
          }),
        );
      },
    };
  }
}
