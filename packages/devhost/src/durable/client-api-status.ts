import { notFound, type RouteContext, TERMINAL } from "./client-api-context.js";
import { boolParam, secondsParam } from "./client-api-input.js";
import { type HttpManagementPayload, instanceManagementUrls } from "./client-binding.js";
import { type DurableApiResponse, json } from "./http-errors.js";
import type { InstanceStatus } from "./types.js";

/**
 * What the durable HTTP API tells a client about one instance, as the extension does: its status
 * (`GET instances/{id}`), the check-status response with the management links a start answers with, and the
 * create-and-wait of a start (`timeout=`).
 */

/** DateTime.ToString("s") + "Z": the extension's status times have whole seconds. */
function extensionTime(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : `${new Date(ms).toISOString().slice(0, 19)}Z`;
}

/** StatusResponsePayload: every field present (the JS SDK requires input and output to be defined). */
export function statusPayload(
  s: InstanceStatus,
  showInput: boolean,
  showHistory: boolean,
): Record<string, unknown> {
  return {
    name: s.name,
    instanceId: s.instanceId,
    runtimeStatus: s.runtimeStatus,
    input: showInput ? (s.input ?? null) : null,
    customStatus: s.customStatus ?? null,
    output: s.output ?? null,
    createdTime: extensionTime(s.createdTime),
    lastUpdatedTime: extensionTime(s.lastUpdatedTime),
    ...(showHistory && s.historyEvents ? { historyEvents: s.historyEvents } : {}),
  };
}

function links(c: RouteContext, instanceId: string): HttpManagementPayload {
  return instanceManagementUrls({
    origin: c.origin,
    instanceId,
    taskHub: c.taskHubParam ?? c.hub.hubName,
    connectionName: c.connection,
    requiredQueryStringParameters: c.settings.requiredQuery,
  });
}

/** CreateCheckStatusResponseMessage: 202, the links without rewind, Location, Retry-After 10. */
function checkStatusResponse(c: RouteContext, instanceId: string): DurableApiResponse {
  const l = links(c, instanceId);
  const body = {
    id: instanceId,
    statusQueryGetUri: l.statusQueryGetUri,
    sendEventPostUri: l.sendEventPostUri,
    terminatePostUri: l.terminatePostUri,
    purgeHistoryDeleteUri: l.purgeHistoryDeleteUri,
    restartPostUri: l.restartPostUri,
    suspendPostUri: l.suspendPostUri,
    resumePostUri: l.resumePostUri,
  };
  return json(202, body, { location: l.statusQueryGetUri, "retry-after": "10" });
}

/** GET instances/{id}: 202 while Pending/Running/ContinuedAsNew/Suspended, 200 once done (Failed: 500 on ask). */
export async function statusResponse(c: RouteContext, instanceId: string): Promise<DurableApiResponse> {
  const showHistory = boolParam(c.req.query, "showHistory", false);
  const showHistoryOutput = boolParam(c.req.query, "showHistoryOutput", false);
  const showInput = boolParam(c.req.query, "showInput", true);
  const failAs500 = boolParam(c.req.query, "returnInternalServerErrorOnFailure", false);
  const s = await c.hub.getStatus(instanceId, { showHistory, showHistoryOutput, showInput });
  if (!s) return notFound(instanceId);
  const body = statusPayload(s, showInput, showHistory);
  if (s.runtimeStatus === "Failed") return json(failAs500 ? 500 : 200, body);
  if (TERMINAL.has(s.runtimeStatus)) return json(200, body);
  const self = `${c.origin}${c.req.path}${c.req.query.size > 0 ? `?${c.req.query}` : ""}`;
  // The extension asks for 5 s here (10 s on a check-status response).
  return json(202, body, { location: self, "retry-after": "5" });
}

/**
 * After a start: wait for completion when asked (timeout=), else the check-status response. The wait is the
 * hub's (waitForChange: woken by its commits, its feed, and its own slow poll); this adds no timer or listener
 * of its own — one read per change, and the request's signal ends it when the client goes away.
 */
export async function startedResponse(c: RouteContext, instanceId: string): Promise<DurableApiResponse> {
  c.where.instanceId = instanceId;
  const timeout = secondsParam(c.req.query, "timeout");
  secondsParam(c.req.query, "pollingInterval"); // validated; unused: the wait is the hub's, not a poll
  if (timeout === undefined) return checkStatusResponse(c, instanceId);
  const deadline = c.settings.now() + timeout * 1000;
  for (;;) {
    const s = await c.hub.getStatus(instanceId);
    if (s?.runtimeStatus === "Completed") return json(200, s.output ?? null);
    if (s && TERMINAL.has(s.runtimeStatus)) return statusResponse(c, instanceId);
    const left = deadline - c.settings.now();
    if (left <= 0 || c.req.signal?.aborted) return checkStatusResponse(c, instanceId);
    await c.hub.waitForChange(instanceId, left, c.req.signal, s?.lastUpdatedTime);
  }
}
