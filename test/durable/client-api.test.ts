import { getEventListeners } from "node:events";
import { ErrorResponse } from "@azure/cosmos";
import { HttpRequest } from "@azure/functions";
import * as df from "durable-functions";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";
import { createDurableApiHandler } from "../../packages/devhost/src/durable/client-api.js";
import { MAX_CONTINUATION_TOKEN_CHARS } from "../../packages/devhost/src/durable/client-api-input.js";
import {
  type DurableClientInputData,
  durableClientInputData,
  ensureWebsiteHostname,
} from "../../packages/devhost/src/durable/client-binding.js";
import { TaskHubError } from "../../packages/devhost/src/durable/errors.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import { DURABLE_HUB_SETTINGS } from "../../packages/devhost/src/durable/settings.js";
import { clientFor, type SeenRequest, serveDurableApi } from "./client-test-server.js";
import { FakeTaskHub } from "./fake-task-hub.js";

/**
 * The real durable-functions 3.5.0 DurableClient, built by df.getClient from our binding data, against our HTTP API
 * on a real socket, over a FAKE in-memory task hub (the Cosmos DB one is tested on its own).
 */

const HUB = "TestHubName";
const ORCHESTRATORS = new Set(["hello", "other"]);

let hub: FakeTaskHub;
let server: Awaited<ReturnType<typeof serveDurableApi>>;
let data: DurableClientInputData;
let client: df.DurableClient;
const savedHostname = process.env.WEBSITE_HOSTNAME;

beforeEach(async () => {
  hub = new FakeTaskHub(HUB);
  server = await serveDurableApi((baseUrl) =>
    createDurableApiHandler({
      hub,
      baseUrl,
      isOrchestrator: (name) => ORCHESTRATORS.has(name),
      now: () => hub.now(),
    }),
  );
  delete process.env.WEBSITE_HOSTNAME;
  ensureWebsiteHostname(process.env, server.baseUrl);
  data = durableClientInputData({ baseUrl: server.baseUrl, hubName: HUB });
  client = clientFor(data);
});

afterEach(async () => {
  await server.close();
  if (savedHostname === undefined) delete process.env.WEBSITE_HOSTNAME;
  else process.env.WEBSITE_HOSTNAME = savedHostname;
});

const api = (path: string) => `${server.baseUrl}/runtime/webhooks/durabletask/${path}`;
const last = (): SeenRequest => server.seen[server.seen.length - 1] as SeenRequest;
async function started(name: string, id: string, input?: unknown): Promise<string> {
  return client.startNew(name, { instanceId: id, ...(input === undefined ? {} : { input }) });
}

describe("durable HTTP API with the real DurableClient", () => {
  it("startNew posts the input to orchestrators/{name}[/{id}] and returns the instance id", async () => {
    expect(await started("hello", "inst-1", { city: "Oslo" })).toBe("inst-1");
    expect(last()).toMatchObject({
      method: "POST",
      path: "/runtime/webhooks/durabletask/orchestrators/hello/inst-1",
      body: '{"city":"Oslo"}',
    });
    expect(hub.callsOf("startNew")).toEqual([["hello", { instanceId: "inst-1", input: '{"city":"Oslo"}' }]]);

    const generated = await client.startNew("other");
    expect(generated).toBe("fake0001");
    // No input: the SDK posts "" and axios JSON-encodes it, so the wire (and the extension) carries '""'.
    expect(server.seen[1]?.body).toBe('""');
    expect(hub.callsOf("startNew")[1]).toEqual(["other", { input: '""' }]);
    // An empty body is no input at all.
    expect((await fetch(api("orchestrators/other/empty"), { method: "POST" })).status).toBe(202);
    expect(hub.callsOf("startNew")[2]).toEqual(["other", { instanceId: "empty", input: null }]);

    // The 202 itself: the management links on the port the client called, Location, Retry-After 10.
    const res = await fetch(api("orchestrators/hello/inst-2"), { method: "POST", body: "[1,2]" });
    expect(res.status).toBe(202);
    const body = (await res.json()) as Record<string, string>;
    const statusUri = `${api("instances/inst-2")}?taskHub=${HUB}&connection=Storage`;
    expect(body).toEqual({
      id: "inst-2",
      statusQueryGetUri: statusUri,
      sendEventPostUri: `${api("instances/inst-2/raiseEvent/{eventName}")}?taskHub=${HUB}&connection=Storage`,
      terminatePostUri: `${api("instances/inst-2/terminate")}?reason={text}&taskHub=${HUB}&connection=Storage`,
      purgeHistoryDeleteUri: statusUri,
      restartPostUri: `${api("instances/inst-2/restart")}?taskHub=${HUB}&connection=Storage`,
      suspendPostUri: `${api("instances/inst-2/suspend")}?reason={text}&taskHub=${HUB}&connection=Storage`,
      resumePostUri: `${api("instances/inst-2/resume")}?reason={text}&taskHub=${HUB}&connection=Storage`,
    });
    expect(res.headers.get("location")).toBe(statusUri);
    expect(res.headers.get("retry-after")).toBe("10");
  });

  it("startNew of an unknown orchestrator or of a running instance's id is refused (400, 409)", async () => {
    await expect(client.startNew("nope")).rejects.toThrow(/400.*'nope' doesn't exist/);
    await started("hello", "dup");
    await expect(started("hello", "dup")).rejects.toThrow(/409.*already exists/);
    hub.complete("dup", 1);
    expect(await started("hello", "dup")).toBe("dup"); // a finished instance's id may be reused
  });

  it("getStatus: 202 while Pending/Running/Suspended, 200 once Completed/Failed/Terminated, 404 unknown", async () => {
    await started("hello", "s1", "in");
    const pending = await fetch(api("instances/s1?taskHub=TestHubName"));
    expect(pending.status).toBe(202);
    expect(pending.headers.get("location")).toBe(`${api("instances/s1")}?taskHub=TestHubName`);
    expect(pending.headers.get("retry-after")).toBe("5");
    const s = await client.getStatus("s1");
    expect(s).toMatchObject({
      name: "hello",
      instanceId: "s1",
      runtimeStatus: "Pending",
      input: "in",
      output: null,
    });
    expect(s.createdTime.toISOString()).toBe("2026-01-01T00:00:00.000Z"); // whole seconds, as the extension

    for (const status of ["Running", "Suspended"] as const) {
      hub.setStatus("s1", status);
      expect((await fetch(api("instances/s1"))).status).toBe(202);
      expect((await client.getStatus("s1")).runtimeStatus).toBe(status);
    }
    hub.complete("s1", { ok: true });
    const done = await fetch(api("instances/s1"));
    expect(done.status).toBe(200);
    expect(done.headers.get("location")).toBeNull();
    expect(await client.getStatus("s1")).toMatchObject({ runtimeStatus: "Completed", output: { ok: true } });

    await started("hello", "f1");
    hub.fail("f1", "boom");
    expect((await fetch(api("instances/f1"))).status).toBe(200);
    expect((await fetch(api("instances/f1?returnInternalServerErrorOnFailure=true"))).status).toBe(500);
    expect(await client.getStatus("f1")).toMatchObject({ runtimeStatus: "Failed", output: "boom" });

    await expect(client.getStatus("missing")).rejects.toThrow(/404.*missing/);
  });

  it("getStatus passes showHistory / showHistoryOutput / showInput to the hub and shapes the body", async () => {
    await started("hello", "h1", { secret: 1 });
    hub.complete("h1", 42);
    await client.getStatus("h1", { showHistory: true, showHistoryOutput: true });
    expect(last().query).toBe("?showHistory=true&showHistoryOutput=true");
    expect(hub.callsOf("getStatus").at(-1)).toEqual([
      "h1",
      { showHistory: true, showHistoryOutput: true, showInput: true },
    ]);

    const withHistory = (await (await fetch(api("instances/h1?showHistory=true"))).json()) as {
      historyEvents: { EventType: number }[];
    };
    expect(withHistory.historyEvents.map((e) => e.EventType)).toEqual([0, 1]);
    const plain = (await (await fetch(api("instances/h1?showInput=false"))).json()) as Record<
      string,
      unknown
    >;
    expect(plain).toEqual({
      name: "hello",
      instanceId: "h1",
      runtimeStatus: "Completed",
      input: null,
      customStatus: null,
      output: 42,
      createdTime: "2026-01-01T00:00:00Z",
      lastUpdatedTime: "2026-01-01T00:00:00Z",
    });
  });

  it("getStatusAll follows x-ms-continuation-token pages; getStatusBy sends the filters", async () => {
    for (const id of ["a1", "a2", "a3", "a4", "a5"]) await started("hello", id);
    hub.complete("a2", null);
    hub.complete("a4", null);
    const everything = await client.getStatusAll();
    expect(everything.map((s) => s.instanceId)).toEqual(["a1", "a2", "a3", "a4", "a5"]);
    const pages = server.seen.filter((r) => r.method === "GET");
    expect(pages.map((r) => r.headers["x-ms-continuation-token"])).toEqual([undefined, "page:2", "page:4"]);

    const from = new Date(hub.now() - 10_000);
    const completed = await client.getStatusBy({
      createdTimeFrom: from,
      runtimeStatus: [df.OrchestrationRuntimeStatus.Completed],
    });
    expect(completed.map((s) => s.instanceId)).toEqual(["a2", "a4"]);
    expect(last().query).toBe(`?createdTimeFrom=${from.toISOString()}&runtimeStatus=Completed`);
    expect(hub.callsOf("list").at(-1)).toEqual([
      { createdTimeFrom: from.toISOString(), runtimeStatus: ["Completed"], showInput: true },
    ]);

    const prefixed = await fetch(api("instances?instanceIdPrefix=a&top=3&runtimeStatus=Pending,Canceled"));
    expect(prefixed.headers.get("x-ms-continuation-token")).toBeNull();
    expect(((await prefixed.json()) as { instanceId: string }[]).map((s) => s.instanceId)).toEqual([
      "a1",
      "a3",
      "a5",
    ]);
  });

  it("raiseEvent: 202 to a live instance, 410 (resolved) to a finished one, 404 (rejected) to none", async () => {
    await started("hello", "e1");
    await client.raiseEvent("e1", "Approval", { approved: true });
    expect(last()).toMatchObject({
      method: "POST",
      path: "/runtime/webhooks/durabletask/instances/e1/raiseEvent/Approval",
      body: '{"approved":true}',
    });
    expect(hub.callsOf("raiseEvent")).toEqual([["e1", "Approval", '{"approved":true}']]);

    hub.complete("e1", 0);
    await client.raiseEvent("e1", "Late", 1);
    expect(await fetch(api("instances/e1/raiseEvent/Late"), postJson(1)).then((r) => r.status)).toBe(410);
    await expect(client.raiseEvent("none", "X", 1)).rejects.toThrow("No instance with ID 'none' found.");

    // As the extension: an unknown or finished instance answers 404/410 before the content type is looked at.
    const text = { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" };
    expect((await fetch(api("instances/e1/raiseEvent/Late"), text)).status).toBe(410);
    expect((await fetch(api("instances/none/raiseEvent/Late"), text)).status).toBe(404);
  });

  it("terminate, suspend and resume carry the reason; finished instances answer 410", async () => {
    await started("hello", "t1");
    await client.suspend("t1", "maintenance window");
    expect(last().path).toBe("/runtime/webhooks/durabletask/instances/t1/suspend");
    expect(hub.callsOf("suspend")).toEqual([["t1", "maintenance window"]]);
    expect((await client.getStatus("t1")).runtimeStatus).toBe("Suspended");
    await client.resume("t1", "done");
    expect(hub.callsOf("resume")).toEqual([["t1", "done"]]);
    expect((await client.getStatus("t1")).runtimeStatus).toBe("Running");
    await client.terminate("t1", "no longer needed");
    expect(hub.callsOf("terminate")).toEqual([["t1", "no longer needed"]]);
    expect(await client.getStatus("t1")).toMatchObject({
      runtimeStatus: "Terminated",
      output: "no longer needed",
    });

    expect((await fetch(api("instances/t1/terminate?reason=again"), { method: "POST" })).status).toBe(410);
    await client.terminate("t1", "again"); // the SDK resolves a 410
    await expect(client.suspend("ghost", "x")).rejects.toThrow("No instance with ID 'ghost' found.");
  });

  it("purgeInstanceHistory: 200 {instancesDeleted} when finished, 412 while running, 0 when unknown", async () => {
    await started("hello", "p1");
    await expect(client.purgeInstanceHistory("p1")).rejects.toThrow(/412.*terminal state/);
    hub.complete("p1", "x");
    expect(await client.purgeInstanceHistory("p1")).toEqual({ instancesDeleted: 1 });
    expect(last()).toMatchObject({ method: "DELETE", path: "/runtime/webhooks/durabletask/instances/p1" });
    expect(await client.purgeInstanceHistory("p1")).toEqual({ instancesDeleted: 0 });
  });

  it("purgeInstanceHistoryBy sends createdTimeFrom/createdTimeTo/runtimeStatus; nothing matched → 0", async () => {
    for (const id of ["q1", "q2", "q3"]) await started("hello", id);
    hub.complete("q1", 1);
    hub.fail("q2", "x");
    const from = new Date(hub.now() - 60_000);
    const to = new Date(hub.now() + 60_000);
    const result = await client.purgeInstanceHistoryBy({
      createdTimeFrom: from,
      createdTimeTo: to,
      runtimeStatus: [df.OrchestrationRuntimeStatus.Completed, df.OrchestrationRuntimeStatus.Failed],
    });
    expect(result).toEqual({ instancesDeleted: 2 });
    expect(last()).toMatchObject({
      method: "DELETE",
      query: `?createdTimeFrom=${from.toISOString()}&createdTimeTo=${to.toISOString()}&runtimeStatus=Completed,Failed`,
    });
    expect(hub.callsOf("purgeMany")).toEqual([
      [
        {
          createdTimeFrom: from.toISOString(),
          createdTimeTo: to.toISOString(),
          runtimeStatus: ["Completed", "Failed"],
        },
      ],
    ]);
    expect(await client.purgeInstanceHistoryBy({ createdTimeFrom: from })).toEqual({ instancesDeleted: 0 });
    expect([...hub.instances.keys()]).toEqual(["q3"]);
  });

  it("createCheckStatusResponse links work: GET statusQueryGetUri → 202 then 200", async () => {
    await started("hello", "c1");
    const request = new HttpRequest({ method: "POST", url: `${server.baseUrl}/api/start` });
    const response = client.createCheckStatusResponse(request, "c1");
    expect(response.status).toBe(202);
    const payload = (await response.json()) as Record<string, string>;
    expect(response.headers.get("location")).toBe(payload.statusQueryGetUri);
    const statusUri = payload.statusQueryGetUri as string;
    expect(statusUri).toBe(`${api("instances/c1")}?taskHub=${HUB}&connection=Storage`);

    expect((await fetch(statusUri)).status).toBe(202);
    hub.complete("c1", { greeting: "hi" });
    const done = await fetch(statusUri);
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({ runtimeStatus: "Completed", output: { greeting: "hi" } });

    // The other links act on the instance too.
    await started("hello", "c2");
    const links = (await client.createCheckStatusResponse(request, "c2").json()) as Record<string, string>;
    const raise = (links.sendEventPostUri as string).replace("{eventName}", "Go");
    expect((await fetch(raise, postJson("now"))).status).toBe(202);
    const terminate = (links.terminatePostUri as string).replace("{text}", "stop");
    expect((await fetch(terminate, { method: "POST" })).status).toBe(202);
    expect(hub.callsOf("terminate")).toEqual([["c2", "stop"]]);
  });

  it("waitForCompletionOrCreateCheckStatusResponse polls getStatus: output when done, else check-status", async () => {
    await started("hello", "w1");
    hub.onGetStatus = (id, count) => {
      if (id === "w1" && count === 2) hub.complete("w1", { total: 3 });
    };
    const request = new HttpRequest({ method: "POST", url: `${server.baseUrl}/api/start` });
    const done = await client.waitForCompletionOrCreateCheckStatusResponse(request, "w1", {
      timeoutInMilliseconds: 5_000,
      retryIntervalInMilliseconds: 10,
    });
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ total: 3 });
    expect(server.seen.filter((r) => r.path.endsWith("/instances/w1")).length).toBe(2);

    hub.onGetStatus = undefined;
    await started("hello", "w2");
    const pending = await client.waitForCompletionOrCreateCheckStatusResponse(request, "w2", {
      timeoutInMilliseconds: 60,
      retryIntervalInMilliseconds: 20,
    });
    expect(pending.status).toBe(202);
    expect(((await pending.json()) as { id: string }).id).toBe("w2");
  });

  it("createAndWaitOnNewInstancePostUri waits on the hub (no polling): 200 output, or 202 at the timeout", async () => {
    const uri = (id: string) =>
      data.creationUrls.createAndWaitOnNewInstancePostUri
        .replace("{functionName}", "hello")
        .replace("[/{instanceId}]", `/${id}`)
        .replace("{timeoutInSeconds}", "30")
        .replace("{intervalInSeconds}", "1");

    const completing = fetch(uri("cw1"), { method: "POST", body: '"input"' });
    await hub.nextWait("cw1");
    expect(hub.callsOf("waitForChange")).toEqual([["cw1", 30_000]]);
    hub.complete("cw1", ["a", "b"]);
    const done = await completing;
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual(["a", "b"]);

    const timingOut = fetch(uri("cw2"), { method: "POST" });
    await hub.nextWait("cw2");
    hub.elapse(30_000);
    const late = await timingOut;
    expect(late.status).toBe(202);
    expect(late.headers.get("location")).toBe(`${api("instances/cw2")}?taskHub=${HUB}&connection=Storage`);

    const failing = fetch(uri("cw3"), { method: "POST" });
    await hub.nextWait("cw3");
    hub.fail("cw3", "broken");
    const failed = await failing;
    expect(failed.status).toBe(200);
    expect(await failed.json()).toMatchObject({ runtimeStatus: "Failed", output: "broken" });

    // A client that goes away ends the wait (the request's signal), not the timeout.
    const leaving = new AbortController();
    const gone = fetch(uri("cw4"), { method: "POST", signal: leaving.signal }).catch(() => "aborted");
    await hub.nextWait("cw4");
    const polls = hub.callsOf("getStatus").length;
    leaving.abort();
    expect(await gone).toBe("aborted");
    await vi.waitFor(() => expect(hub.callsOf("getStatus").length).toBe(polls + 1), { timeout: WAIT_MS });
    expect(hub.callsOf("waitForChange").filter(([id]) => id === "cw4")).toHaveLength(1);
  });

  it("restart starts the orchestration again with its input (same id on request)", async () => {
    await started("hello", "r1", { n: 1 });
    hub.complete("r1", "ok");
    const res = await fetch(api("instances/r1/restart?restartWithNewInstanceId=false"), { method: "POST" });
    expect(res.status).toBe(202);
    expect(((await res.json()) as { id: string }).id).toBe("r1");
    expect(hub.callsOf("startNew").at(-1)).toEqual(["hello", { instanceId: "r1", input: '{"n":1}' }]);
    const fresh = await fetch(api("instances/r1/restart"), { method: "POST" });
    expect(((await fresh.json()) as { id: string }).id).toBe("fake0001");
    expect((await fetch(api("instances/zz/restart"), { method: "POST" })).status).toBe(400);
  });

  it("rewind is refused with clear errors the SDK surfaces", async () => {
    await started("hello", "rw");
    await expect(client.rewind("rw", "retry")).rejects.toThrow(
      'This orchestration has status Pending, but only orchestrations in the "Failed" state can be rewound.',
    );
    hub.fail("rw", "x");
    await expect(client.rewind("rw", "retry")).rejects.toThrow("Rewind is not supported by the dev host");
  });

  it("the client's readEntityState and signalEntity reach the hub's entities", async () => {
    hub.entities.set("@counter@k1", "7");
    expect(await client.readEntityState(new df.EntityId("Counter", "k1"))).toMatchObject({
      entityExists: true,
      entityState: 7,
    });
    expect((await client.readEntityState(new df.EntityId("counter", "none"))).entityExists).toBe(false);
    await client.signalEntity(new df.EntityId("counter", "k1"), "add", 1);
    expect(hub.callsOf("signalEntity")).toEqual([["counter", "k1", "add", "1"]]);
  });
});

function postJson(value: unknown): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(value) };
}

describe("durable HTTP API: bad requests get 400 with the reason", () => {
  const cases: [string, string, RequestInit | undefined, RegExp][] = [
    [
      "malformed start body",
      "orchestrators/hello",
      { method: "POST", body: "{oops" },
      /Invalid JSON content/,
    ],
    ["instance id with a control char", "instances/a%01b", undefined, /Invalid instance id/],
    ["instance id too long", `instances/${"x".repeat(101)}`, undefined, /1–100 characters/],
    ["bad percent-encoding", "instances/%E0%A4%A", undefined, /percent-encoding/],
    ["unknown runtimeStatus", "instances?runtimeStatus=Runing", undefined, /"Runing" is not one of/],
    ["top 0", "instances?top=0", undefined, /'top' must be a whole number from 1 to 1000/],
    ["bad date", "instances?createdTimeFrom=yesterday", undefined, /ISO 8601/],
    ["bad boolean", "instances/x1?showHistory=maybe", undefined, /'showHistory' must be true or false/],
    ["bad timeout", "orchestrators/hello?timeout=soon", { method: "POST" }, /'timeout' must be a number/],
    ["purge many without createdTimeFrom", "instances", { method: "DELETE" }, /createdTimeFrom/],
    ["another task hub", "instances?taskHub=OtherHub", undefined, /does not serve the task hub 'OtherHub'/],
    [
      "event that is not JSON content",
      "instances/x1/raiseEvent/Go",
      { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" },
      /Only application\/json/,
    ],
  ];
  for (const [what, path, init, message] of cases) {
    it(what, async () => {
      await started("hello", "x1");
      const res = await fetch(api(path), init);
      expect(res.status).toBe(400);
      expect(((await res.json()) as { Message: string }).Message).toMatch(message);
    });
  }

  it("a malformed continuation token the hub refuses is a 400, not a 500", async () => {
    const res = await fetch(api("instances"), { headers: { "x-ms-continuation-token": "garbage" } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { Message: string }).Message).toMatch(/Malformed continuation token/);
  });

  it("unknown routes and methods answer 404/405 inside the prefix; other paths are not the handler's", async () => {
    expect((await fetch(api("nothing/here"))).status).toBe(404);
    expect((await fetch(api("instances/x1/explode"), { method: "POST" })).status).toBe(404);
    const wrong = await fetch(api("orchestrators/hello"));
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    const handler = createDurableApiHandler({ hub, baseUrl: server.baseUrl });
    const req = { method: "GET", query: new URLSearchParams(), headers: {}, body: new Uint8Array() };
    expect(handler({ ...req, path: "/api/resources" })).toBeUndefined();
    expect(handler({ ...req, path: "/runtime/webhooks/durabletaskx" })).toBeUndefined();
  });

  it("a task hub failure is a 500 with a generic body; onError gets the reason, the route and the instance", async () => {
    const errors: string[] = [];
    const broken = new FakeTaskHub(HUB);
    broken.getStatus = async () => {
      throw new Error("Cosmos DB is unreachable");
    };
    const handler = createDurableApiHandler({
      hub: broken,
      baseUrl: server.baseUrl,
      onError: (m) => errors.push(m),
    });
    const out = await handler({
      method: "GET",
      path: "/runtime/webhooks/durabletask/instances/abc",
      query: new URLSearchParams(),
      headers: {},
      body: new Uint8Array(),
    });
    expect(out?.status).toBe(500);
    expect(JSON.parse(out?.body ?? "{}")).toEqual({
      Message:
        "The durable task hub failed on GET instances/{id} (instance 'abc'); the dev host log has the details.",
      code: "TaskHubFailure",
    });
    expect(errors).toEqual([
      "The durable task hub failed on GET instances/{id} (instance 'abc'): Cosmos DB is unreachable",
    ]);
  });
});

/** One request straight to a handler (no socket): status, headers and the parsed body. */
async function direct(
  handler: ReturnType<typeof createDurableApiHandler>,
  method: string,
  pathAndQuery: string,
  init: { body?: string | Uint8Array; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<{ status: number; headers: Record<string, string>; body: { Message?: string; code?: string } }> {
  const [path = "", query = ""] = pathAndQuery.split("?");
  const body = typeof init.body === "string" ? Buffer.from(init.body) : (init.body ?? new Uint8Array());
  const out = await handler({
    method,
    path: `/runtime/webhooks/durabletask/${path}`,
    query: new URLSearchParams(query),
    headers: init.headers ?? {},
    body,
    ...(init.signal ? { signal: init.signal } : {}),
  });
  if (!out) throw new Error(`not a durable path: ${path}`);
  return { status: out.status, headers: out.headers, body: out.body === "" ? {} : JSON.parse(out.body) };
}

/** A Cosmos DB error as the SDK throws it (ErrorResponse, numeric `code`, retryAfterInMs on 429). */
function cosmosError(code: number | undefined, message: string, retryAfterInMs?: number): ErrorResponse {
  const e = new ErrorResponse(`${message}\r\nActivityId: 0f6e7707-4bbd-48cc-9e0b-a48ed0117424`);
  if (code !== undefined) e.code = code;
  if (retryAfterInMs !== undefined) e.retryAfterInMs = retryAfterInMs;
  return e;
}

describe("durable HTTP API: one mapping from errors to answers", () => {
  const errors: string[] = [];
  /** A handler over a hub whose getStatus, list and startNew throw `error`. */
  function throwing(error: unknown) {
    errors.length = 0;
    const broken = new FakeTaskHub(HUB);
    const fail = async () => {
      throw error;
    };
    broken.getStatus = fail;
    broken.list = fail;
    broken.startNew = fail;
    return createDurableApiHandler({
      hub: broken,
      baseUrl: "http://127.0.0.1:1",
      onError: (m) => errors.push(m),
    });
  }

  const cases: [string, unknown, number, string, RegExp, boolean][] = [
    [
      "TaskHubError",
      new TaskHubError("An instance exists.", 409, "InstanceExists"),
      409,
      "InstanceExists",
      /^An instance exists\.$/,
      false,
    ],
    [
      "Cosmos 400",
      cosmosError(400, "One of the specified inputs is invalid"),
      400,
      "BadRequest",
      /^Cosmos DB refused the request: One of the specified inputs is invalid$/,
      false,
    ],
    ["Cosmos 404", cosmosError(404, "Resource Not Found"), 404, "NotFound", /Resource Not Found$/, false],
    [
      "Cosmos 409",
      cosmosError(409, "Entity with the specified id already exists"),
      409,
      "Conflict",
      /already exists$/,
      false,
    ],
    [
      "Cosmos 412",
      cosmosError(412, "Precondition Failed"),
      409,
      "ConcurrentChange",
      /^The orchestration instance 'i1' changed concurrently; retry\.$/,
      false,
    ],
    [
      "Cosmos 413",
      cosmosError(413, "Request size is too large"),
      413,
      "PayloadTooLarge",
      /too large$/,
      false,
    ],
    [
      "Cosmos 500",
      cosmosError(500, "Internal Server Error"),
      500,
      "TaskHubFailure",
      /^The durable task hub failed on GET instances\/\{id\} \(instance 'i1'\); the dev host log has the details\.$/,
      true,
    ],
    [
      "Cosmos 408 (SDK timeout)",
      cosmosError(408, "Request timed out"),
      500,
      "TaskHubFailure",
      /dev host log/,
      true,
    ],
    ["a plain Error", new Error("secret internals"), 500, "TaskHubFailure", /^(?!.*secret)/, true],
    ["a thrown string", "boom", 500, "TaskHubFailure", /dev host log/, true],
    [
      "a refusal with a 4xx statusCode",
      Object.assign(new Error("No task hub runs."), { statusCode: 404 }),
      404,
      "NotFound",
      /^No task hub runs\.$/,
      false,
    ],
    [
      "a refusal with a 410 and its own code",
      Object.assign(new Error("Gone."), { statusCode: 410, code: "Gone" }),
      410,
      "Gone",
      /^Gone\.$/,
      false,
    ],
  ];
  for (const [what, error, status, code, message, logged] of cases) {
    it(`${what} → ${status} ${code}${logged ? ", logged" : ""}`, async () => {
      const res = await direct(throwing(error), "GET", "instances/i1");
      expect(res.status).toBe(status);
      expect(res.body.code).toBe(code);
      expect(res.body.Message).toMatch(message);
      expect(Object.keys(res.body).sort()).toEqual(["Message", "code"]);
      expect(errors).toHaveLength(logged ? 1 : 0);
      if (logged)
        expect(errors[0]).toMatch(
          /^The durable task hub failed on GET instances\/\{id\} \(instance 'i1'\): /,
        );
    });
  }

  it("429 and 503 → 503 with Retry-After from retryAfterInMs, rounded up, at least 1 s; logged", async () => {
    for (const [error, seconds] of [
      [cosmosError(429, "Request rate is large", 1_500), "2"],
      [cosmosError(429, "Request rate is large", 10), "1"],
      [cosmosError(429, "Request rate is large"), "1"],
      [cosmosError(503, "Service Unavailable", 4_000), "4"],
    ] as const) {
      const res = await direct(throwing(error), "POST", "orchestrators/hello/b1");
      expect(res.status).toBe(503);
      expect(res.headers["retry-after"]).toBe(seconds);
      expect(res.body).toMatchObject({
        code: "ServiceBusy",
        Message: expect.stringContaining(`retry after ${seconds} s`),
      });
      expect(errors).toEqual([
        expect.stringMatching(
          /^The durable task hub is busy on POST orchestrators\/\{name\}\/\{instanceId\} \(instance 'b1'\)/,
        ),
      ]);
    }
  });

  it("a continuation token the store refuses → 400 InvalidContinuationToken with the reason", async () => {
    const token = { "x-ms-continuation-token": '{"rid":"x"}' };
    for (const error of [
      cosmosError(400, "Invalid Continuation Token: it is not a continuation token this emulator issued."),
      // The SDK's own refusals of a token it cannot parse (cross-partition queries on an account).
      cosmosError(
        undefined,
        "Invalid continuation token format. Expected token with rangeMappings property.",
      ),
      new Error("Failed to parse continuation token: Unexpected token"),
    ]) {
      const res = await direct(throwing(error), "GET", "instances", { headers: token });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe("InvalidContinuationToken");
      expect(res.body.Message).toMatch(/x-ms-continuation-token .*continuation token/i);
      expect(errors).toEqual([]);
    }
    // Without a token, the same SDK error is no client's mistake.
    expect(
      (await direct(throwing(new Error("Failed to parse continuation token: x")), "GET", "instances")).status,
    ).toBe(500);
  });

  it("a token no header could carry is refused at the door: non-ASCII, control characters, over 16 KiB", async () => {
    for (const token of ["tök", "a\u0000b", "x".repeat(MAX_CONTINUATION_TOKEN_CHARS + 1)]) {
      const res = await direct(
        createDurableApiHandler({ hub, baseUrl: server.baseUrl }),
        "GET",
        "instances",
        {
          headers: { "x-ms-continuation-token": token },
        },
      );
      expect(res).toMatchObject({ status: 400, body: { code: "InvalidContinuationToken" } });
    }
    expect(hub.callsOf("list")).toEqual([]);
    const longest = "x".repeat(MAX_CONTINUATION_TOKEN_CHARS);
    const res = await direct(createDurableApiHandler({ hub, baseUrl: server.baseUrl }), "GET", "instances", {
      headers: { "x-ms-continuation-token": longest },
    });
    expect(res.body.Message).toMatch(/Malformed continuation token/); // reached the (fake) store
  });

  it("top: 1 … 1000 is a page size; 0, 1001 and a huge number are 400", async () => {
    const handler = createDurableApiHandler({ hub, baseUrl: server.baseUrl });
    for (const top of ["1", "1000"])
      expect((await direct(handler, "GET", `instances?top=${top}`)).status).toBe(200);
    expect(hub.callsOf("list").map(([f]) => (f as { top: number }).top)).toEqual([1, 1000]);
    for (const top of ["0", "1001", "99999999999", "999999999999999999999", "1e3", "-1"]) {
      const res = await direct(handler, "GET", `instances?top=${top}`);
      expect(res).toMatchObject({ status: 400, body: { code: "InvalidParameter" } });
    }
  });
});

describe("durable HTTP API: payload limits at the door", () => {
  const MAX = 2_048;
  const DEPTH = DURABLE_LIMITS.payloadDepth;
  let limited: ReturnType<typeof createDurableApiHandler>;
  beforeEach(() => {
    limited = createDurableApiHandler({
      hub,
      baseUrl: server.baseUrl,
      isOrchestrator: (n) => ORCHESTRATORS.has(n),
      maxPayloadBytes: MAX,
    });
  });
  /** A JSON string of exactly `bytes` UTF-8 bytes: `ch` (1–4 bytes) repeated, padded with 'x'. */
  const jsonOfBytes = (bytes: number, ch = "x") => {
    const room = bytes - 2;
    const unit = Buffer.byteLength(ch);
    return `"${ch.repeat(Math.floor(room / unit))}${"x".repeat(room % unit)}"`;
  };
  const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
  const tooLarge = (what: string, bytes: number) => ({
    code: "PayloadTooLarge",
    Message: `${what} is ${bytes} bytes; the task hub stores at most ${MAX} (DURABLE_MAX_PAYLOAD_BYTES).`,
  });
  const tooDeep = (what: string, depth: number) => ({
    code: "PayloadTooDeep",
    Message: `${what} nests objects and arrays ${depth} deep; the task hub allows at most ${DEPTH}.`,
  });

  it("start: exactly the limit passes, one byte more is 413 naming the limit and the setting", async () => {
    for (const [label, ch] of [
      ["one", "x"],
      ["two", "é"],
      ["four", "😀"],
    ] as const) {
      const body = jsonOfBytes(MAX, ch);
      expect(Buffer.byteLength(body)).toBe(MAX);
      expect((await direct(limited, "POST", `orchestrators/hello/at-${label}`, { body })).status).toBe(202);
      const over = await direct(limited, "POST", `orchestrators/hello/over-${label}`, {
        body: jsonOfBytes(MAX + 1, ch),
      });
      expect(over).toMatchObject({ status: 413, body: tooLarge("The orchestration input", MAX + 1) });
    }
    // Nothing over the limit reached the hub.
    expect(hub.callsOf("startNew").map(([, o]) => (o as { instanceId: string }).instanceId)).toEqual([
      "at-one",
      "at-two",
      "at-four",
    ]);
  });

  it("start: nested exactly the limit passes, one level deeper is 400, 5,000 deep too (counted on the text)", async () => {
    expect(
      (await direct(limited, "POST", "orchestrators/hello/deep-ok", { body: nested(DEPTH) })).status,
    ).toBe(202);
    // 5,000 deep is 10,000 bytes: under the default limit, so the depth answers.
    const byDefault = createDurableApiHandler({ hub, baseUrl: server.baseUrl });
    for (const [handler, depth] of [
      [limited, DEPTH + 1],
      [byDefault, 5_000],
    ] as const) {
      const res = await direct(handler, "POST", `orchestrators/hello/deep-${depth}`, { body: nested(depth) });
      expect(res).toMatchObject({ status: 400, body: tooDeep("The orchestration input", depth) });
    }
    // Brackets inside strings are text, not nesting.
    const inString = JSON.stringify("[".repeat(DEPTH + 10));
    expect((await direct(limited, "POST", "orchestrators/hello/deep-str", { body: inString })).status).toBe(
      202,
    );
    expect(hub.callsOf("startNew")).toHaveLength(2);
  });

  it("start: the size is judged before the depth, the depth before the JSON; bad UTF-8 is 400", async () => {
    // Over the size and broken JSON: 413, not 400 — the body was not decoded or parsed.
    const huge = `${"[".repeat(MAX)}oops`;
    expect((await direct(limited, "POST", "orchestrators/hello/o1", { body: huge })).body.code).toBe(
      "PayloadTooLarge",
    );
    // Too deep and broken JSON: the depth answers (PayloadTooDeep), as the text is never parsed.
    const deepBroken = `${"[".repeat(DEPTH + 1)}oops`;
    expect((await direct(limited, "POST", "orchestrators/hello/o2", { body: deepBroken })).body.code).toBe(
      "PayloadTooDeep",
    );
    const notUtf8 = new Uint8Array([0x22, 0xff, 0xfe, 0x22]);
    expect((await direct(limited, "POST", "orchestrators/hello/o3", { body: notUtf8 })).body).toMatchObject({
      code: "InvalidJson",
      Message: "The orchestration input is not UTF-8 text.",
    });
    expect(hub.callsOf("startNew")).toEqual([]);
  });

  it("raise event: data at the limit passes; one byte more is 413, one level deeper 400", async () => {
    await started("hello", "ev");
    const json = { "content-type": "application/json" };
    const at = await direct(limited, "POST", "instances/ev/raiseEvent/Go", {
      body: jsonOfBytes(MAX),
      headers: json,
    });
    expect(at.status).toBe(202);
    const over = await direct(limited, "POST", "instances/ev/raiseEvent/Go", {
      body: jsonOfBytes(MAX + 1),
      headers: json,
    });
    expect(over).toMatchObject({ status: 413, body: tooLarge("The data of event 'Go'", MAX + 1) });
    const deep = await direct(limited, "POST", "instances/ev/raiseEvent/Go", {
      body: nested(DEPTH + 1),
      headers: json,
    });
    expect(deep).toMatchObject({ status: 400, body: tooDeep("The data of event 'Go'", DEPTH + 1) });
    expect(hub.callsOf("raiseEvent")).toHaveLength(1);
  });

  it("terminate / suspend / resume: a reason whose JSON is at the limit passes, one byte more is 413", async () => {
    for (const operation of ["suspend", "resume", "terminate"] as const) {
      await started("hello", `r-${operation}`);
      if (operation === "resume") hub.setStatus(`r-${operation}`, "Suspended");
      // The reason is stored as JSON text: its quotes count.
      const over = await direct(
        limited,
        "POST",
        `instances/r-${operation}/${operation}?reason=${"x".repeat(MAX - 1)}`,
      );
      expect(over).toMatchObject({ status: 413, body: tooLarge(`The ${operation} reason`, MAX + 1) });
      expect(hub.callsOf(operation)).toEqual([]);
      const at = await direct(
        limited,
        "POST",
        `instances/r-${operation}/${operation}?reason=${"x".repeat(MAX - 2)}`,
      );
      expect(at.status).toBe(202);
      expect(hub.callsOf(operation)).toEqual([[`r-${operation}`, "x".repeat(MAX - 2)]]);
    }
  });

  it("restart: an input over the (since lowered) limit is 413; at the limit it starts again", async () => {
    await started("hello", "big", "y".repeat(MAX - 2 + 1)); // stored as MAX + 1 bytes of JSON
    await started("hello", "fits", "y".repeat(MAX - 2));
    hub.complete("big", 1);
    hub.complete("fits", 1);
    const over = await direct(limited, "POST", "instances/big/restart");
    expect(over).toMatchObject({ status: 413, body: tooLarge("The restarted instance's input", MAX + 1) });
    expect((await direct(limited, "POST", "instances/fits/restart")).status).toBe(202);
    expect(hub.callsOf("startNew")).toHaveLength(3);
  });

  it("without maxPayloadBytes the hub's default applies (DURABLE_MAX_PAYLOAD_BYTES), and a getter is read per request", async () => {
    const fallback = DURABLE_HUB_SETTINGS.maxPayloadBytes.default;
    const handler = createDurableApiHandler({ hub, baseUrl: server.baseUrl });
    expect(
      (await direct(handler, "POST", "orchestrators/hello/d1", { body: jsonOfBytes(fallback) })).status,
    ).toBe(202);
    expect(
      (await direct(handler, "POST", "orchestrators/hello/d2", { body: jsonOfBytes(fallback + 1) })).status,
    ).toBe(413);
    let current = 100_000;
    const live = createDurableApiHandler({ hub, baseUrl: server.baseUrl, maxPayloadBytes: () => current });
    expect((await direct(live, "POST", "orchestrators/hello/g1", { body: jsonOfBytes(50_000) })).status).toBe(
      202,
    );
    current = 10_000;
    expect((await direct(live, "POST", "orchestrators/hello/g2", { body: jsonOfBytes(50_000) })).status).toBe(
      413,
    );
  });
});

describe("durable HTTP API: create-and-wait waits on the hub and leaves nothing behind", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("no timer of its own, one read per wake-up; 1,000 waits ended by timeout or abort leave 0 waiters and listeners", async () => {
    vi.useFakeTimers();
    const handler = createDurableApiHandler({
      hub,
      baseUrl: "http://127.0.0.1:1",
      isOrchestrator: (n) => ORCHESTRATORS.has(n),
      now: () => hub.now(),
    });
    // Requests that time out share one signal that is never aborted: a listener left per request would pile up.
    const shared = new AbortController();
    for (let i = 0; i < 1_000; i++) {
      const id = `w${i}`;
      const byAbort = i % 2 === 1;
      const own = new AbortController();
      const pending = direct(handler, "POST", `orchestrators/hello/${id}?timeout=30`, {
        signal: byAbort ? own.signal : shared.signal,
      });
      await hub.nextWait(id);
      // Waiting: the hub holds the wait; the API has no timer (a poll would show here).
      expect(vi.getTimerCount()).toBe(0);
      expect(hub.live.waiters).toBe(1);
      if (byAbort) own.abort();
      else hub.elapse(30_000);
      expect((await pending).status).toBe(202);
      expect(getEventListeners(own.signal, "abort")).toHaveLength(0);
    }
    expect(hub.live).toEqual({ waiters: 0, abortListeners: 0 });
    expect(getEventListeners(shared.signal, "abort")).toHaveLength(0);
    expect(vi.getTimerCount()).toBe(0);
    // Each wait: one read before it, one after it ended; one waitForChange for the whole 30 s.
    expect(hub.callsOf("waitForChange")).toHaveLength(1_000);
    expect(hub.callsOf("getStatus")).toHaveLength(2_000);
  });

  it("a change wakes the wait at once; a change that does not finish it waits again for the time left", async () => {
    const handler = createDurableApiHandler({
      hub,
      baseUrl: "http://127.0.0.1:1",
      isOrchestrator: (n) => ORCHESTRATORS.has(n),
      now: () => hub.now(),
    });
    const pending = direct(handler, "POST", "orchestrators/hello/ch1?timeout=60");
    await hub.nextWait("ch1");
    hub.elapse(10_000);
    hub.setStatus("ch1", "Running"); // a change, not the end: read once, wait for the rest
    await vi.waitFor(() => expect(hub.callsOf("waitForChange")).toHaveLength(2));
    hub.complete("ch1", "done");
    const res = await pending;
    expect(res).toMatchObject({ status: 200, body: "done" });
    const [[, first], [, second]] = hub.callsOf("waitForChange") as [string, number][];
    expect(first).toBe(60_000);
    expect(second).toBe(60_000 - 10_000 - 1); // setStatus moves the fake clock by 1 ms
    expect(hub.callsOf("getStatus")).toHaveLength(3);
    expect(hub.live).toEqual({ waiters: 0, abortListeners: 0 });
  });
});
