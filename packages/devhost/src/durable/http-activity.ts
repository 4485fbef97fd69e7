import { errorMessage } from "../errorMessage.js";
import type { ActivityInvoker, FailureDetails } from "./types.js";

/**
 * `context.df.callHttp` as the Durable extension runs it for out-of-process apps: the orchestrator's CallHttp action
 * is scheduled as the built-in activity `BuiltIn::HttpActivity` (the extension's HttpOptions reserved name) whose input
 * is the SDK's DurableHttpRequest and whose result is a DurableHttpResponse (`{statusCode, headers, content}`;
 * a header with one value is a string, with several an array, as the extension's HttpHeadersConverter writes them).
 * Any status — 500 too — is a response the orchestrator gets; only a request that does not complete (refused
 * connection, timeout, a token that cannot be had) fails the task. The 202 + Location polling with durable timers is
 * run by the engine (http-polling.ts), one exchange here per poll.
 */

export const HTTP_ACTIVITY_NAME = "BuiltIn::HttpActivity";

/** HttpOptions.DefaultAsyncRequestSleepTimeMilliseconds: a poll's wait without Retry-After; sent to the SDK too. */
export const DEFAULT_HTTP_ASYNC_SLEEP_MS = 30_000;

/** durable-functions 3.x's DurableHttpRequest, as the CallHttp action carries it. */
export interface DurableHttpRequestWire {
  method?: string;
  uri?: string;
  content?: string;
  headers?: Record<string, string | string[]>;
  tokenSource?: { kind?: string; resource?: string };
  asynchronousPatternEnabled?: boolean;
}

export interface DurableHttpResponseWire {
  statusCode: number;
  headers: Record<string, string | string[]>;
  content: string;
}

/** Gets a bearer token for a scope; throws when no credential is available. */
export type TokenGetter = (scope: string) => Promise<string>;

export interface HttpActivityOptions {
  /** The whole exchange (connect, headers, body), as the extension's HttpClient.Timeout (DURABLE_HTTP_TIMEOUT_MS). */
  timeoutMs: number;
  /** A response body longer than this (UTF-8 bytes) is not read to its end: the task fails naming the limit. */
  maxPayloadBytes: number;
  /** How a managed identity token source's token is had (DefaultAzureCredential unless a test passes its own). */
  getToken?: TokenGetter;
}

type Outcome = { result: string } | { failure: FailureDetails };

const fail = (ErrorType: string, ErrorMessage: string): Outcome => ({
  failure: { ErrorType, ErrorMessage, IsNonRetriable: false },
});

/** The extension maps these two resources to their `.default` scope; any other resource gets `/.default` here. */
export function tokenScope(resource: string): string {
  if (resource.endsWith("/.default")) return resource;
  return `${resource.replace(/\/+$/, "")}/.default`;
}

let defaultCredential: { getToken(scope: string): Promise<{ token: string } | null> } | undefined;

/** The token the app's connections would use: @azure/identity's DefaultAzureCredential, as the extension. */
export const defaultTokenGetter: TokenGetter = async (scope) => {
  if (!defaultCredential) {
    const { DefaultAzureCredential } = await import("@azure/identity");
    defaultCredential = new DefaultAzureCredential();
  }
  const token = await defaultCredential.getToken(scope);
  if (!token) throw new Error("the credential returned no token");
  return token.token;
};

function parseRequest(input: string | null): DurableHttpRequestWire | string {
  let value: unknown;
  try {
    value = input === null ? undefined : JSON.parse(input);
  } catch {
    return "its request is not JSON";
  }
  // The extension's activity input is a one-element array around the request; the SDK's action carries it bare.
  const request = Array.isArray(value) ? value[0] : value;
  if (!request || typeof request !== "object") return "it carries no request";
  const r = request as DurableHttpRequestWire;
  if (typeof r.uri !== "string") return "its request has no uri";
  return r;
}

function requestHeaders(r: DurableHttpRequestWire): Headers | string {
  const headers = new Headers();
  try {
    for (const [name, value] of Object.entries(r.headers ?? {})) {
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, String(v));
    }
  } catch (e) {
    return `a request header is not valid: ${errorMessage(e)}`;
  }
  const type = headers.get("content-type");
  if (type?.includes("multipart")) return "multipart content is not supported with callHttp";
  // The extension sends content as text/plain unless the request names its type.
  if (r.content !== undefined && r.content !== null && !type) headers.set("content-type", "text/plain");
  return headers;
}

function responseHeaders(res: Response): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of res.headers) {
    if (name === "set-cookie") continue;
    out[name] = value;
  }
  const cookies = res.headers.getSetCookie();
  if (cookies.length === 1) out["set-cookie"] = cookies[0] as string;
  else if (cookies.length > 1) out["set-cookie"] = cookies;
  return out;
}

/** Reads the body up to `max` bytes; undefined when it is longer (the rest is not read). */
async function boundedText(res: Response, max: number): Promise<string | undefined> {
  if (!res.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** Runs one durable HTTP request; never throws. */
export async function runDurableHttpRequest(input: string | null, o: HttpActivityOptions): Promise<Outcome> {
  const r = parseRequest(input);
  if (typeof r === "string") return fail("ArgumentException", `callHttp: ${r}.`);
  const method = (r.method ?? "GET").toUpperCase();
  const what = `callHttp ${method} ${r.uri}`;
  let url: URL;
  try {
    url = new URL(r.uri as string);
  } catch {
    return fail("UriFormatException", `${what}: the uri is not an absolute URL.`);
  }
  const headers = requestHeaders(r);
  if (typeof headers === "string") return fail("FunctionFailedException", `${what}: ${headers}.`);
  if (r.tokenSource) {
    const resource = r.tokenSource.resource;
    if (r.tokenSource.kind !== "AzureManagedIdentity" || typeof resource !== "string") {
      return fail(
        "NotSupportedException",
        `${what}: the token source kind '${String(r.tokenSource.kind)}' is not supported (only a ManagedIdentityTokenSource).`,
      );
    }
    try {
      headers.set(
        "authorization",
        `Bearer ${await (o.getToken ?? defaultTokenGetter)(tokenScope(resource))}`,
      );
    } catch (e) {
      return fail(
        "CredentialUnavailableError",
        `${what}: no token for the resource '${resource}' (ManagedIdentityTokenSource). The dev host gets it with DefaultAzureCredential, as the app's connections do: sign in with \`az login\` (or azd, Visual Studio Code, or set AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_CLIENT_SECRET). The credential said: ${errorMessage(e)}`,
      );
    }
  }
  const signal = AbortSignal.timeout(o.timeoutMs);
  try {
    const res = await fetch(url, {
      method,
      headers,
      ...(r.content !== undefined && r.content !== null && method !== "GET" && method !== "HEAD"
        ? { body: r.content }
        : {}),
      // The extension's HttpClientHandler follows redirects (AllowAutoRedirect's default); so does fetch here.
      redirect: "follow",
      signal,
    });
    const content = await boundedText(res, o.maxPayloadBytes);
    if (content === undefined) {
      return fail(
        "PayloadTooLarge",
        `The result of activity '${HTTP_ACTIVITY_NAME}' (${what}) is over ${o.maxPayloadBytes} bytes: its response content is larger than DURABLE_MAX_PAYLOAD_BYTES (${o.maxPayloadBytes}), the largest activity result the dev host's task hub stores.`,
      );
    }
    const response: DurableHttpResponseWire = {
      statusCode: res.status,
      headers: responseHeaders(res),
      content,
    };
    return { result: JSON.stringify(response) };
  } catch (e) {
    if (signal.aborted) {
      return fail(
        "TimeoutException",
        `${what}: no complete response within ${o.timeoutMs} ms (DURABLE_HTTP_TIMEOUT_MS, the extension's HTTP timeout).`,
      );
    }
    const cause = e instanceof Error && e.cause instanceof Error ? `: ${e.cause.message}` : "";
    return fail("HttpRequestException", `${what}: ${errorMessage(e)}${cause}`);
  }
}

/** The app's activities, with the built-in HTTP activity in front of them. */
export function withHttpActivity(invoke: ActivityInvoker, o: HttpActivityOptions): ActivityInvoker {
  return (item) => (item.name === HTTP_ACTIVITY_NAME ? runDurableHttpRequest(item.input, o) : invoke(item));
}
