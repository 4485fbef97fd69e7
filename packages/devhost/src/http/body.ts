import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { type DataRateRule, watchDataRate } from "./dataRate.js";
import { sendProblem } from "./problem.js";

/** What to do with the rest of a refused request's body: read and drop this much more, keep the socket this long. */
export interface RefusalBounds {
  /** DEV_HTTP_DISCARD_AFTER_REFUSAL_BYTES */
  discardBytes: number;
  /** DEV_HTTP_REFUSAL_LINGER_MS */
  lingerMs: number;
}

/** The body of a request without one (no Content-Length or Transfer-Encoding, or Content-Length 0). */
const NO_BODY = Buffer.alloc(0);

/**
 * Whether the request has a body: as node:http frames a request (RFC 9112 §6.3), a Transfer-Encoding or a
 * Content-Length above 0. Without either the request ends with its headers, and there is nothing to read or watch.
 */
export function requestHasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && Number(length) !== 0);
}

/**
 * The body of a request, read up to `limit` bytes: "too-large" as soon as the declared Content-Length or the bytes
 * that arrived (chunked bodies too) pass it — reading stops there, the rest is not buffered —, "too-slow" when it
 * arrives slower than the minimum data rate (`rate`, dataRate.ts), or "aborted" when the client went away first (no
 * invocation then).
 */
export function readBody(
  req: IncomingMessage,
  limit: number,
  rate?: DataRateRule,
): Promise<Buffer | "too-large" | "too-slow" | "aborted"> {
  // Most requests (GET, HEAD) have none: no listeners, no flowing stream, no 'end' to wait a tick for.
  if (!requestHasBody(req)) return Promise.resolve(NO_BODY);
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > limit) return resolve("too-large");
    const chunks: Buffer[] = [];
    let size = 0;
    const stopWatching = rate && !req.complete ? watchDataRate(req, rate, () => stop("too-slow")) : () => {};
    const stop = (outcome: "too-large" | "too-slow") => {
      stopWatching();
      req.off("data", onData);
      req.pause();
      chunks.length = 0;
      resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      stop("too-large");
    };
    req.on("data", onData);
    req.on("end", () => {
      stopWatching();
      resolve(Buffer.concat(chunks));
    });
    // A request destroyed before its end (client aborted) would otherwise keep a graceful stop waiting forever.
    req.on("close", () => {
      stopWatching();
      resolve("aborted");
    });
    req.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? resolve("aborted") : reject(e)));
  });
}

/** Answers 413 for a body over `limit` (see refuse for what happens to the rest of the body). */
export function refuseLargeBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  what: string,
  bounds: RefusalBounds,
): void {
  refuse(
    req,
    res,
    bounds,
    413,
    "RequestBodyTooLarge",
    `The request body is larger than ${limit} bytes, the limit of ${what}.`,
  );
}

/** Answers 408 for a body that arrived slower than the minimum data rate, as Kestrel does (RequestBodyTimeout). */
export function refuseSlowBody(
  req: IncomingMessage,
  res: ServerResponse,
  rate: DataRateRule,
  bounds: RefusalBounds,
): void {
  refuse(
    req,
    res,
    bounds,
    408,
    "RequestBodyTimeout",
    `The request body arrived slower than ${rate.minBytesPerSecond} bytes/s after a grace period of ${rate.graceMs} ms (the minimum data rate, DEV_HTTP_MIN_REQUEST_BODY_DATA_RATE / DEV_HTTP_REQUEST_BODY_GRACE_MS).`,
  );
}

/**
 * A refusal before the body was read to its end: the answer, then at most `discardBytes` more of the body read and
 * dropped, then the connection closed — gracefully: `Connection: close`, the answer flushed, the write side closed,
 * and only `lingerMs` later (or when the client closes) the socket destroyed. Destroying it at once, with the
 * client's body still arriving, sends a TCP reset, and a client still writing (Node's fetch) loses the answer it had
 * not read yet: ECONNRESET instead of the 413. node:http would otherwise read and drop all of the body, however
 * large, before the connection's next request.
 */
export function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  bounds: RefusalBounds,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): void {
  const rest = !req.complete;
  if (rest) lingerOnClose(req.socket, bounds.lingerMs);
  sendProblem(res, status, code, message, rest ? { ...headers, connection: "close" } : headers);
  if (rest) discardBody(req, bounds.discardBytes);
}

/**
 * The rest of the body of a request that was answered without it: read and dropped up to `discardBytes`, then no
 * longer read (the client's writes then wait on a full TCP window until the connection closes).
 */
function discardBody(req: IncomingMessage, discardBytes: number): void {
  let discarded = 0;
  const onData = (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded <= discardBytes) return;
    req.off("data", onData);
    req.pause(); // node:http stops reading the socket once this request's buffer is full
  };
  req.on("data", onData);
  req.resume();
}

/** The sockets whose close is already lingering (a second refusal on one connection changes nothing). */
const lingering = new WeakSet<Socket>();

/**
 * node:http ends a `Connection: close` answer with `socket.destroySoon()`: the FIN, then at once the destroy — a
 * reset while the client still sends. This socket's destroySoon ends it the same way and destroys it `lingerMs`
 * later, or as soon as the client closes its side.
 */
function lingerOnClose(socket: Socket, lingerMs: number): void {
  if (lingering.has(socket)) return;
  lingering.add(socket);
  const destroy = () => {
    clearTimeout(timer);
    socket.destroy();
  };
  let timer: NodeJS.Timeout | undefined;
  Object.defineProperty(socket, "destroySoon", {
    configurable: true,
    value: () => {
      if (socket.destroyed) return;
      if (socket.writable) socket.end();
      timer = setTimeout(destroy, lingerMs);
      timer.unref();
      socket.once("end", destroy); // the client closed its side: nothing more to wait for
    },
  });
  socket.once("close", () => clearTimeout(timer));
}
