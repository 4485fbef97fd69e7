import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from "@azure/functions";
import {
  type ApiRequest,
  type ApiResponse,
  answer,
  openAppContext,
  ResourceApi,
} from "../src/shared/resources/index.js";
import { HTTP_RESPONSE_DEADLINE_MS } from "../src/shared/settings.js";

// The resource-provider API (ARM style): the route binds here, src/shared/resources does the work.

const resourceRoute = "subscriptions/{subscriptionId}/resources/{resourceName}";

/**
 * The request as the API sees it: its log is the invocation's (context.error / context.warn reach the Functions
 * host's log and the dev host's, with the invocation id in the line), its signal the response deadline.
 */
export function apiRequest(
  request: HttpRequest,
  context: InvocationContext,
  signal: AbortSignal,
): ApiRequest {
  return {
    url: request.url,
    header: (name) => request.headers.get(name),
    text: () => request.text(),
    params: request.params,
    signal,
    log: { error: (message) => context.error(message), warn: (message) => context.warn(message) },
    invocationId: context.invocationId,
  };
}

function httpResponse(res: ApiResponse): HttpResponseInit {
  return {
    status: res.status,
    headers: res.headers,
    ...(res.body === undefined ? {} : { jsonBody: res.body }),
  };
}

/**
 * Runs one API call. Opening the app's context (settings, client, containers) happens inside `answer` too, so a
 * failure there is a logged 500 like any other, not an unhandled throw. The deadline's timer is cleared as soon as
 * the call ends.
 */
async function serve(
  request: HttpRequest,
  context: InvocationContext,
  call: (api: ResourceApi, req: ApiRequest) => Promise<ApiResponse>,
): Promise<HttpResponseInit> {
  const deadline = new AbortController();
  const timer = setTimeout(
    () =>
      deadline.abort(new Error(`the ${HTTP_RESPONSE_DEADLINE_MS / 1000} s HTTP response deadline passed`)),
    HTTP_RESPONSE_DEADLINE_MS,
  );
  try {
    const req = apiRequest(request, context, deadline.signal);
    return httpResponse(await answer(req, async () => call(new ResourceApi(await openAppContext()), req)));
  } finally {
    clearTimeout(timer);
  }
}

export function putResource(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.put(req));
}

export function patchResource(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.patch(req));
}

export function deleteResource(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.delete(req));
}

export function getResource(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.get(req));
}

export function listResources(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.list(req));
}

export function getOperation(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  return serve(request, context, (api, req) => api.getOperation(req));
}

app.http("putResource", {
  methods: ["PUT"],
  route: resourceRoute,
  authLevel: "anonymous",
  handler: putResource,
});
app.http("patchResource", {
  methods: ["PATCH"],
  route: resourceRoute,
  authLevel: "anonymous",
  handler: patchResource,
});
app.http("deleteResource", {
  methods: ["DELETE"],
  route: resourceRoute,
  authLevel: "anonymous",
  handler: deleteResource,
});
app.http("getResource", {
  methods: ["GET"],
  route: resourceRoute,
  authLevel: "anonymous",
  handler: getResource,
});
app.http("listResources", {
  methods: ["GET"],
  route: "subscriptions/{subscriptionId}/resources",
  authLevel: "anonymous",
  handler: listResources,
});
app.http("getOperation", {
  methods: ["GET"],
  route: "subscriptions/{subscriptionId}/operations/{operationId}",
  authLevel: "anonymous",
  handler: getOperation,
});
