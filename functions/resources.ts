import { app, type HttpRequest, type HttpResponseInit, type InvocationContext } from "@azure/functions";
import {
  type ApiRequest,
  type ApiResponse,
  openAppContext,
  ResourceApi,
} from "../src/shared/resources/index.js";

// The resource-provider API (ARM style): the route binds here, src/shared/resources does the work.

const resourceRoute = "subscriptions/{subscriptionId}/resources/{resourceName}";

function apiRequest(request: HttpRequest): ApiRequest {
  return {
    url: request.url,
    header: (name) => request.headers.get(name),
    text: () => request.text(),
    params: request.params,
  };
}

function httpResponse(res: ApiResponse): HttpResponseInit {
  return {
    status: res.status,
    headers: res.headers,
    ...(res.body === undefined ? {} : { jsonBody: res.body }),
  };
}

export async function putResource(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).put(apiRequest(request)));
}

export async function patchResource(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).patch(apiRequest(request)));
}

export async function deleteResource(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).delete(apiRequest(request)));
}

export async function getResource(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).get(apiRequest(request)));
}

export async function listResources(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).list(apiRequest(request)));
}

export async function getOperation(
  request: HttpRequest,
  _context: InvocationContext,
): Promise<HttpResponseInit> {
  return httpResponse(await new ResourceApi(await openAppContext()).getOperation(apiRequest(request)));
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
