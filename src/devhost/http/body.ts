import type { IncomingMessage, ServerResponse } from "node:http";
import { sendProblem } from "./problem.js";

/**
 * The body of a request, read up to `limit` bytes: "too-large" as soon as the declared Content-Length or the bytes
 * that arrived (chunked bodies too) pass it — reading stops there, the rest is not buffered — or "aborted" when the
 * client went away first (no invocation then).
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer | "too-large" | "aborted"> {
  return new Promise((resolve, reject) => {
    if (Number(req.headers["content-length"] ?? 0) > limit) return resolve("too-large");
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      req.off("data", onData);
      req.pause();
      chunks.length = 0;
      resolve("too-large");
    };
    req.on("data", onData);
    req.on("end", () => resolve(Buffer.concat(chunks)));
    // A request destroyed before its end (client aborted) would otherwise keep a graceful stop waiting forever.
    req.on("close", () => resolve("aborted"));
    req.on("error", (e: NodeJS.ErrnoException) => (e.code === "ECONNRESET" ? resolve("aborted") : reject(e)));
  });
}

/**
 * Answers 413 for a body over `limit`, then reads and drops at most `discardBytes` more of it — so that a client
 * still sending sees the answer — and closes the connection past that (the rest is never read).
 */
export function refuseLargeBody(
  req: IncomingMessage,
  res: ServerResponse,
  limit: number,
  what: string,
  discardBytes: number,
): void {
  sendProblem(
    res,
    413,
    "RequestBodyTooLarge",
    `The request body is larger than ${limit} bytes, the limit of ${what}.`,
  );
  discardBody(req, discardBytes);
}

/**
 * The rest of the body of a request that was answered without it (refused): read and dropped up to `discardBytes`,
 * then the connection is closed. node:http would otherwise read and drop all of it, however large, before the
 * connection's next request.
 */
export function discardBody(req: IncomingMessage, discardBytes: number): void {
  if (req.complete) return;
  let discarded = 0;
  req.on("data", (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > discardBytes) req.socket.destroy();
  });
  req.resume();
}
