import { Readable } from "node:stream";
import type { InvocationResponse } from "../coreTypes.js";

/**
 * Large HTTP response bodies cross the worker channel in pieces. Node's IPC channel carries one message at a time:
 * a 200 MB body in the invocation's result held every other invocation's messages (results, logs) behind it for
 * seconds. The worker leaves such a body out of the result, keeps it, and sends one piece per `bodyPull` from the
 * host; the host pulls as its HTTP client reads, so a slow client holds neither the channel nor the whole body in the
 * dev host's memory, and other invocations' messages pass between the pieces.
 */

/** The worker's side: bodies waiting to be pulled, by invocation id. */
export class PendingBodies {
  readonly #bodies = new Map<string, { bytes: Uint8Array; at: number }>();
  readonly #chunkBytes: number;

  constructor(chunkBytes: number) {
    this.#chunkBytes = chunkBytes;
  }

  /**
   * Takes a body larger than a piece out of `response` (its http returnValue), kept for pulls; returns its size, or
   * undefined when the response crosses whole.
   */
  holdBack(invocationId: string, response: InvocationResponse): number | undefined {
    const body = response.returnValue?.http?.body;
    const bytes = body?.bytes;
    if (!body || !(bytes instanceof Uint8Array) || bytes.byteLength <= this.#chunkBytes) return undefined;
    body.bytes = new Uint8Array(0);
    this.#bodies.set(invocationId, { bytes, at: 0 });
    return bytes.byteLength;
  }

  /** The next piece, and whether it is the last (then the body is forgotten); undefined for an unknown id. */
  next(invocationId: string): { chunk: Uint8Array; last: boolean } | undefined {
    const pending = this.#bodies.get(invocationId);
    if (!pending) return undefined;
    const end = Math.min(pending.bytes.byteLength, pending.at + this.#chunkBytes);
    const chunk = pending.bytes.subarray(pending.at, end);
    pending.at = end;
    const last = end >= pending.bytes.byteLength;
    if (last) this.#bodies.delete(invocationId);
    return { chunk, last };
  }

  cancel(invocationId: string): void {
    this.#bodies.delete(invocationId);
  }
}

/**
 * The host's side: the body as a Readable that pulls one piece whenever its reader wants more (`pull`), ends with
 * the last piece, and tells the worker when it is given up (`cancel`, e.g. its client went away).
 */
export class PulledBody extends Readable {
  readonly #pull: () => void;
  readonly #cancel: () => void;
  #ended = false;

  constructor(pull: () => void, cancel: () => void) {
    super();
    this.#pull = pull;
    this.#cancel = cancel;
  }

  override _read(): void {
    this.#pull();
  }

  /** A piece from the worker. */
  deliver(chunk: Uint8Array, last: boolean): void {
    this.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
    if (last) {
      this.#ended = true;
      this.push(null);
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#ended) this.#cancel();
    callback(error);
  }
}
