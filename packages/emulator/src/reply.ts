import type { ServerResponse } from "node:http";
import { CosmosError } from "./errors.js";
import type { Reply } from "./routes/context.js";

/** A handler's error as the service answers it: `{code, message}` with the activity id; anything else is a 500. */
export function errorReply(e: unknown, activityId: string): Reply {
  if (e instanceof CosmosError) {
    const headers: Record<string, string> = { ...e.headers };
    if (e.substatus !== undefined) headers["x-ms-substatus"] = String(e.substatus);
    return {
      status: e.status,
      body: {
        code: e.code,
        message: `${e.message}\r\nActivityId: ${activityId}`,
        ...(e.additionalErrorInfo === undefined ? {} : { additionalErrorInfo: e.additionalErrorInfo }),
      },
      headers,
      charge: e.charge ?? 0,
    };
  }
  console.error("emulator: internal error:", e);
  return {
    status: 500,
    body: {
      code: "InternalServerError",
      message: `Unexpected error: ${(e as Error)?.message}\r\nActivityId: ${activityId}`,
    },
  };
}

/** Writes a reply with the headers every answer of the service carries. */
export function send(res: ServerResponse, reply: Reply, activityId: string): void {
  const headers: Record<string, string> = {
    "x-ms-activity-id": activityId,
    "x-ms-request-charge": String(reply.charge ?? 0),
    "x-ms-gatewayversion": "version=2.14.0",
    ...reply.headers,
  };
  let payload: string | Buffer | undefined;
  if (Buffer.isBuffer(reply.body) && reply.status !== 204 && reply.status !== 304) {
    // A binary answer (a .NET batch's HybridRow stream).
    payload = reply.body;
    headers["content-type"] = "application/octet-stream";
    headers["content-length"] = String(payload.length);
  } else if (reply.body !== undefined && reply.status !== 204 && reply.status !== 304) {
    payload = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
    headers["content-type"] = "application/json";
    headers["content-length"] = String(Buffer.byteLength(payload));
  } else {
    headers["content-length"] = "0";
  }
  res.writeHead(reply.status, headers);
  res.end(payload);
}
