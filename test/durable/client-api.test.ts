import { HttpRequest, InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createDurableApiHandler } from "../../src/devhost/durable/client-api.js";
import {
  type DurableClientInputData,
  durableClientInputData,
  ensureWebsiteHostname,
} from "../../src/devhost/durable/client-binding.js";
import { WAIT_MS } from "../support/until.js";
import { type SeenRequest, serveDurableApi } from "./client-test-server.js";
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

function clientFor(binding: DurableClientInputData): df.DurableClient {
  const input = df.input.durableClient();
  const context = new InvocationContext({ functionName: "starter", options: { extraInputs: [input] } });
  context.extraInputs.set(input, binding);
  return df.getClient(context);
}

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

  it("rewind and entities are refused with clear errors the SDK surfaces", async () => {
    await started("hello", "rw");
    await expect(client.rewind("rw", "retry")).rejects.toThrow(
      'This orchestration has status Pending, but only orchestrations in the "Failed" state can be rewound.',
    );
    hub.fail("rw", "x");
    await expect(client.rewind("rw", "retry")).rejects.toThrow("Rewind is not supported by the dev host");
    await expect(client.readEntityState(new df.EntityId("counter", "k1"))).rejects.toThrow(
      /501.*entities are not supported by the dev host/,
    );
    await expect(client.signalEntity(new df.EntityId("counter", "k1"), "add", 1)).rejects.toThrow(/501/);
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
    ["top 0", "instances?top=0", undefined, /'top' must be a positive whole number/],
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

  it("a task hub failure is a 500 with the reason, reported to onError", async () => {
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
    expect(JSON.parse(out?.body ?? "{}").Message).toBe(
      "The durable task hub failed: Cosmos DB is unreachable",
    );
    expect(errors).toEqual(["The durable task hub failed: Cosmos DB is unreachable"]);
  });
});
