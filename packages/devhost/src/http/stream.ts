import { randomUUID } from "node:crypto";
import { request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { HttpData, TypedData } from "../coreTypes.js";
import type { BindingExtensions } from "../extensions.js";
import { answerInvocationFailure } from "../hostLimits.js";
import { HTTP_REASON, invokeFunction } from "../invocation.js";
import type { LoadedApp, LoadedFunction } from "../loader.js";
import type { HostLogger } from "../logger.js";
import { type RefusalBounds, refuseLargeBody, refuseSlowBody } from "./body.js";
import { type DataRateRule, watchDataRate } from "./dataRate.js";

export interface StreamInvocation {
  app: LoadedApp;
  fn: LoadedFunction;
  logger: HostLogger;
  extensions?: BindingExtensions;
  /** The library's proxy (`HttpUri` from getCapabilities). */
  httpUri: string;
  req: IncomingMessage;
  res: ServerResponse;
  http: HttpData;
  /** FUNCTIONS_REQUEST_BODY_SIZE_LIMIT (bytes), its name for the 413, and what to read of a refused body. */
  limit: number;
  limitName: string;
  refusal: RefusalBounds;
  /** The minimum data rate of the body as it streams (paused time, the proxy pushing back, not counted). */
  rate: DataRateRule;
}

/**
 * HTTP streaming (`app.setup({ enableHttpStream: true })`), as the host does it: the request itself goes to the
 * library's proxy server with `x-ms-invocation-id`, `x-forwarded-host` and `x-forwarded-proto`, the invocation
 * carries headers and route params as trigger metadata, and the handler's response streams back through the
 * proxy. A failed invocation never reaches the proxy: that is a 500 as without streaming (empty, or naming a binding
 * the dev host cannot serve).
 */
export async function invokeStreaming(s: StreamInvocation): Promise<void> {
  const { req, res, fn } = s;
  const invocationId = randomUUID();
  const forward = httpRequest(new URL(req.url ?? "/", s.httpUri), {
    method: req.method,
    headers: {
      ...req.headers,
      "x-ms-invocation-id": invocationId,
      "x-forwarded-host": req.headers.host ?? "localhost",
      "x-forwarded-proto": "http",
    },
  });
  const answered = new Promise<void>((resolve) => {
    forward.once("response", (proxied) => {
      const headers = { ...proxied.headers };
      delete headers["x-ms-invocation-id"];
      res.writeHead(proxied.statusCode ?? 200, headers);
      proxied.pipe(res);
      proxied.once("end", resolve);
      proxied.once("error", () => {
        res.destroy();
        resolve();
      });
    });
    forward.once("error", () => resolve()); // destroyed below after a failure
  });
  // The body streams to the proxy, counted as it goes (chunked bodies too): past the limit the forwarding stops,
  // the client gets 413 (when nothing was answered yet) and the rest of its body is not read.
  let refused = false;
  let size = 0;
  req.pipe(forward);
  const cut = (answer: () => void) => {
    refused = true;
    stopWatching();
    req.off("data", onData);
    req.unpipe(forward);
    forward.destroy();
    if (res.headersSent) res.destroy();
    else answer();
  };
  const onData = (chunk: Buffer) => {
    size += chunk.length;
    if (size <= s.limit) return;
    cut(() => refuseLargeBody(req, res, s.limit, s.limitName, s.refusal));
  };
  req.on("data", onData);
  // A body that trickles in is cut as without streaming (408): it holds its throttle slot while it streams.
  const stopWatching = req.complete
    ? () => {}
    : watchDataRate(req, s.rate, () => cut(() => refuseSlowBody(req, res, s.rate, s.refusal)));
  req.once("end", stopWatching);
  req.once("close", stopWatching);

  const triggerMetadata: Record<string, TypedData> = {
    Headers: { json: JSON.stringify(s.http.headers ?? {}) },
    Query: { json: JSON.stringify(s.http.query ?? {}) },
  };
  for (const [name, value] of Object.entries(s.http.params ?? {})) triggerMetadata[name] = { string: value };
  const outcome = await invokeFunction(s.app, fn, s.logger, {
    invocationId,
    reason: HTTP_REASON,
    inputData: [{ name: fn.triggerName, data: { http: s.http } }],
    triggerMetadata,
    extensions: s.extensions,
    bindingData: { ...s.http.query, ...s.http.params, Query: s.http.query, Headers: s.http.headers },
    traceParent: s.http.headers?.traceparent,
  });
  if (refused) return; // answered above (413, 408); the invocation failed for want of its body
  // Whether the handler returned a response, not the response itself: a body that is a stream cannot cross from
  // the worker, and the library has only queued its chunks on the proxy's socket when the invocation ends, so the
  // rest of the body is still on its way and must not be cut.
  if (outcome.error !== undefined || !outcome.returned) {
    // Nothing was (or will be) sent through the proxy for this invocation.
    forward.destroy();
    if (res.headersSent) res.destroy();
    else if (outcome.error !== undefined) answerInvocationFailure(res, outcome.error);
    else {
      res.writeHead(204, { "content-length": "0" });
      res.end();
    }
    return;
  }
  await answered;
}
