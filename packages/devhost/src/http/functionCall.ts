import type { IncomingMessage, ServerResponse } from "node:http";
import { pipeline } from "node:stream/promises";
import type { HttpCookie, HttpData } from "../coreTypes.js";
import type { BindingExtensions } from "../extensions.js";
import { answerInvocationFailure } from "../hostLimits.js";
import { HTTP_REASON, invokeFunction } from "../invocation.js";
import type { LoadedApp } from "../loader.js";
import type { HostLogger } from "../logger.js";
import { type RefusalBounds, readBody, refuseLargeBody, refuseSlowBody, requestHasBody } from "./body.js";
import { joinedHeaders } from "./builtin.js";
import type { DataRateRule } from "./dataRate.js";
import { sendEmpty } from "./problem.js";
import type { HttpRoute } from "./router.js";
import { invokeStreaming } from "./stream.js";

/**
 * One `Set-Cookie` value, as the host writes an RpcHttpCookie: it becomes ASP.NET Core CookieOptions (whose path
 * defaults to "/") appended to the response, one header per cookie, the attributes in SetCookieHeaderValue's order
 * (expires, max-age, domain, path, secure, samesite, httponly). Microsoft's Node worker e2e test expects exactly
 * this for a non-streaming function ("mycookie=myvalue; max-age=200000; path=/, …").
 */
function cookieHeader(c: HttpCookie): string {
  let s = `${c.name}=${c.value ?? ""}`;
  if (c.expires?.value?.seconds !== undefined) {
    s += `; expires=${new Date(c.expires.value.seconds * 1000).toUTCString()}`;
  }
  // TimeSpan.FromSeconds, written as whole seconds.
  if (c.maxAge?.value !== undefined) s += `; max-age=${Math.trunc(c.maxAge.value)}`;
  if (c.domain?.value) s += `; domain=${c.domain.value}`;
  s += `; path=${c.path?.value ?? "/"}`;
  if (c.secure?.value) s += "; secure";
  if (c.sameSite && c.sameSite !== "none")
    s += `; samesite=${c.sameSite === "explicitNone" ? "none" : c.sameSite}`;
  if (c.httpOnly?.value) s += "; httponly";
  return s;
}

function bodyBytes(http: HttpData): Buffer {
  const body = http.body;
  if (!body) return Buffer.alloc(0);
  if (body.bytes) return Buffer.from(body.bytes);
  if (body.string !== undefined) return Buffer.from(body.string);
  if (body.json !== undefined) return Buffer.from(body.json);
  return Buffer.alloc(0);
}

export interface FunctionCall {
  app: LoadedApp;
  logger: HostLogger;
  extensions?: BindingExtensions;
  route: HttpRoute;
  params: Record<string, string>;
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** FUNCTIONS_REQUEST_BODY_SIZE_LIMIT, and what to read of a refused body before closing. */
  limit: number;
  refusal: RefusalBounds;
  /** The minimum data rate of the body. */
  rate: DataRateRule;
  /**
   * Takes the request's slot of the HTTP throttle (called once the body is read: a slow body holds no slot);
   * false when the client went away meanwhile.
   */
  enter(): Promise<boolean>;
}

const LIMIT_NAME = "HTTP functions (FUNCTIONS_REQUEST_BODY_SIZE_LIMIT)";
const EMPTY = Buffer.alloc(0);

/** One HTTP function invocation: the body (bounded), the worker contract's HttpData, the answer. */
export async function serveFunction(c: FunctionCall): Promise<void> {
  const { app, req, res, url, limit } = c;
  const httpUri = app.capabilities.HttpUri;
  // Streaming: the body goes through the library's proxy; a declared length over the limit is refused here.
  if (httpUri && Number(req.headers["content-length"] ?? 0) > limit) {
    return refuseLargeBody(req, res, limit, LIMIT_NAME, c.refusal);
  }
  // Without a body (most GETs) there is nothing to read: no promise to wait on either.
  const body = httpUri || !requestHasBody(req) ? EMPTY : await readBody(req, limit, c.rate);
  if (body === "too-large") return refuseLargeBody(req, res, limit, LIMIT_NAME, c.refusal);
  if (body === "too-slow") return refuseSlowBody(req, res, c.rate, c.refusal);
  if (body === "aborted") return;
  if (!(await c.enter())) return;

  const headers = joinedHeaders(req);
  const query: Record<string, string> = {};
  for (const key of new Set(url.searchParams.keys())) query[key] = url.searchParams.getAll(key).join(",");
  const http: HttpData = {
    method: req.method,
    url: url.href,
    headers,
    query,
    params: c.params,
    body: body.length > 0 ? { bytes: body } : undefined,
  };
  const fn = c.route.fn;
  const { logger, extensions } = c;
  if (httpUri) {
    const bounds = { limit, limitName: LIMIT_NAME, refusal: c.refusal, rate: c.rate };
    return invokeStreaming({ app, fn, logger, extensions, httpUri, req, res, http, ...bounds });
  }
  const outcome = await invokeFunction(app, fn, logger, {
    reason: HTTP_REASON,
    inputData: [{ name: fn.triggerName, data: { http } }],
    extensions,
    // As the host: route params and query values by name, plus `Query` and `Headers` objects.
    bindingData: { ...query, ...c.params, Query: query, Headers: headers },
    traceParent: headers.traceparent,
  });
  // The host answers an unhandled failure with an empty 500 (details in the log under the Id); a limit of the
  // dev host (an unsupported binding) is said in the body.
  if (outcome.error !== undefined) return answerInvocationFailure(res, outcome.error);
  const out = outcome.response?.returnValue?.http;
  if (!out) return sendEmpty(res, 204);
  const bytes = bodyBytes(out);
  for (const [name, value] of Object.entries(out.headers ?? {})) res.setHeader(name, value);
  const cookies = (out.cookies ?? []).map(cookieHeader);
  if (cookies.length) res.setHeader("set-cookie", cookies);
  const held = outcome.body; // a large body, pulled from the worker as the client reads it
  res.setHeader("content-length", String(held ? held.bytes : bytes.length));
  res.writeHead(Number(out.statusCode ?? 200));
  if (!held) return void res.end(req.method === "HEAD" ? undefined : bytes);
  if (req.method === "HEAD") {
    held.stream.destroy();
    return void res.end();
  }
  await pipeline(held.stream, res).catch(() => res.destroy());
}
