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
import type { TaskHub } from "../../packages/devhost/src/durable/hub.js";
import { DURABLE_LIMITS } from "../../packages/devhost/src/durable/limits.js";
import { DURABLE_HUB_SETTINGS } from "../../packages/devhost/src/durable/settings.js";
import { type ApiHub, hubOverFaultyStore, isStatus, ORCHESTRATORS, startApiHub } from "./api-hub.js";
import { clientFor, type SeenRequest, serveDurableApi } from "./client-test-server.js";

/**
 * The real durable-functions 3.5.0 DurableClient, built by df.getClient from our binding data, against our HTTP API
 * on a real socket, over the REAL task hub on the memory backend (api-hub.ts): real orchestrations the test moves
 * through the public API. The handler's clock (create-and-wait deadlines) is the hub's FakeClock.
 */

const HUB = "TestHubName";
/** A generated instance id: a UUID's hex digits. */
const GENERATED = /^[0-9a-f]{32}$/;

let ah: ApiHub;
let hub: TaskHub;
let server: Awaited<ReturnType<typeof serveDurableApi>>;
let data: DurableClientInputData;
let client: df.DurableClient;
const savedHostname = process.env.WEBSITE_HOSTNAME;

beforeEach(async () => {
  ah = await startApiHub(HUB);
  hub = ah.hub;
  server = await serveDurableApi((baseUrl) =>
    createDurableApiHandler({
      hub,
      baseUrl,
      isOrchestrator: (name) => ORCHESTRATORS.has(name),
      now: () => ah.clock.now(),
    }),
  );
  delete process.env.WEBSITE_HOSTNAME;
  ensureWebsiteHostname(process.env, server.baseUrl);
  data = durableClientInputData({ baseUrl: server.baseUrl, hubName: HUB });
  client = clientFor(data);
});

afterEach(async () => {
  await server.close();
  await ah.close();
  if (savedHostname === undefined) delete process.env.WEBSITE_HOSTNAME;
  else process.env.WEBSITE_HOSTNAME = savedHostname;
});

const api = (path: string) => `${server.baseUrl}/runtime/webhooks/durabletask/${path}`;
const last = (): SeenRequest => server.seen[server.seen.length - 1] as SeenRequest;
async function started(name: string, id: string, input?: unknown): Promise<string> {
  return client.startNew(name, { instanceId: id, ...(input === undefined ? {} : { input }) });
}
/** Ends a `hello` instance: "finish" completes it with `output`, "fail" fails it with `output` as the message. */
async function end(id: string, how: "finish" | "fail", output: unknown): Promise<void> {
  expect(await hub.raiseEvent(id, how, JSON.stringify(output))).toBe("ok");
  await ah.until(id, isStatus(how === "finish" ? "Completed" : "Failed"));
}
/** The instance's history as the HTTP API shows it (showHistory). */
async function history(id: string): Promise<Record<string, unknown>[]> {
  return ((await hub.getStatus(id, { showHistory: true }))?.historyEvents ?? []) as Record<string, unknown>[];
}
/** Resolves once a request waits on the hub (create-and-wait): `n` waits held by the hub. */
const waiting = (n = 1) => vi.waitFor(() => expect(hub.waiterCount).toBe(n), { timeout: WAIT_MS });

describe("durable HTTP API with the real DurableClient", () => {
  it("startNew posts the input to orchestrators/{name}[/{id}] and returns the instance id", async () => {
    expect(await started("hello", "inst-1", { city: "Oslo" })).toBe("inst-1");
    expect(last()).toMatchObject({
      method: "POST",
      path: "/runtime/webhooks/durabletask/orchestrators/hello/inst-1",
      body: '{"city":"Oslo"}',
    });
    expect(await ah.backend.readInstance("inst-1")).toMatchObject({
      name: "hello",
      input: '{"city":"Oslo"}',
    });

    const generated = await client.startNew("other");
    expect(generated).toMatch(GENERATED);
    // No input: the SDK posts "" and axios JSON-encodes it, so the wire (and the extension) carries '""'.
    expect(server.seen[1]?.body).toBe('""');
    expect(await ah.backend.readInstance(generated)).toMatchObject({ name: "other", input: '""' });
    // An empty body is no input at all.
    expect((await fetch(api("orchestrators/other/empty"), { method: "POST" })).status).toBe(202);
    expect(await ah.backend.readInstance("empty")).toMatchObject({ name: "other", input: null });

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
    await end("dup", "finish", 1);
    expect(await started("hello", "dup")).toBe("dup"); // a finished instance's id may be reused
  });

  it("getStatus: 202 while Pending/Running/Suspended, 200 once Completed/Failed/Terminated, 404 unknown", async () => {
    ah.hold("s1"); // its first episode waits: Pending
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

    ah.release("s1");
    for (const status of ["Running", "Suspended"] as const) {
      if (status === "Suspended") expect(await hub.suspend("s1", null)).toBe("ok");
      await ah.until("s1", isStatus(status));
      expect((await fetch(api("instances/s1"))).status).toBe(202);
      expect((await client.getStatus("s1")).runtimeStatus).toBe(status);
    }
    expect(await hub.resume("s1", null)).toBe("ok");
    await end("s1", "finish", { ok: true });
    const done = await fetch(api("instances/s1"));
    expect(done.status).toBe(200);
    expect(done.headers.get("location")).toBeNull();
    expect(await client.getStatus("s1")).toMatchObject({ runtimeStatus: "Completed", output: { ok: true } });

    await started("hello", "f1");
    await end("f1", "fail", "boom");
    expect((await fetch(api("instances/f1"))).status).toBe(200);
    expect((await fetch(api("instances/f1?returnInternalServerErrorOnFailure=true"))).status).toBe(500);
    // The engine's failure output, as the extension's: the orchestrator's name and the error's message.
    expect(await client.getStatus("f1")).toMatchObject({
      runtimeStatus: "Failed",
      output: "Orchestrator function 'hello' failed: boom",
    });

    await expect(client.getStatus("missing")).rejects.toThrow(/404.*missing/);
  });

  it("getStatus passes showHistory / showHistoryOutput / showInput to the hub and shapes the body", async () => {
    await started("hello", "h1", { secret: 1 });
    await end("h1", "finish", 42);
    const shown = await client.getStatus("h1", { showHistory: true, showHistoryOutput: true });
    expect(last().query).toBe("?showHistory=true&showHistoryOutput=true");
    expect(shown.input).toEqual({ secret: 1 }); // showInput by default
    // The SDK reads `history`, the extension (and this API) answers `historyEvents`: read them here.
    const withOutput = (await (
      await fetch(api("instances/h1?showHistory=true&showHistoryOutput=true"))
    ).json()) as { historyEvents: Record<string, unknown>[] };
    expect(withOutput.historyEvents).toContainEqual(
      expect.objectContaining({ EventType: "ExecutionCompleted", Result: "42" }),
    );

    const withHistory = (await (await fetch(api("instances/h1?showHistory=true"))).json()) as {
      historyEvents: Record<string, unknown>[];
    };
    expect(withHistory.historyEvents.map((e) => e.EventType)).toEqual([
      "ExecutionStarted",
      "EventRaised",
      "ExecutionCompleted",
    ]);
    expect(withHistory.historyEvents.some((e) => "Result" in e)).toBe(false); // outputs only when asked
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
    // More than two of the store's pages (100 when the client names no `top`), created a minute before the rest.
    const earlier = Array.from({ length: 200 }, (_, i) => `p${String(i).padStart(3, "0")}`);
    for (const id of earlier) await hub.startNew("other", { instanceId: id });
    await ah.clock.advance(60_000);
    for (const id of ["a1", "a2", "a3", "a4", "a5"]) await started("hello", id);
    await end("a2", "finish", null);
    await end("a4", "finish", null);
    for (const id of ["a1", "a3", "a5"]) await ah.until(id, isStatus("Running"));

    const before = server.seen.length;
    const everything = await client.getStatusAll();
    expect(everything.map((s) => s.instanceId)).toEqual(["a1", "a2", "a3", "a4", "a5", ...earlier]);
    const pages = server.seen.slice(before).filter((r) => r.method === "GET");
    // The tokens the client sent back are the ones the pages carried.
    const first = await fetch(api("instances"));
    const t1 = first.headers.get("x-ms-continuation-token") ?? "";
    const second = await fetch(api("instances"), { headers: { "x-ms-continuation-token": t1 } });
    const t2 = second.headers.get("x-ms-continuation-token") ?? "";
    expect([t1, t2].every((t) => t !== "")).toBe(true);
    expect(pages.map((r) => r.headers["x-ms-continuation-token"])).toEqual([undefined, t1, t2]);

    const from = new Date(ah.clock.now() - 10_000);
    const completed = await client.getStatusBy({
      createdTimeFrom: from,
      runtimeStatus: [df.OrchestrationRuntimeStatus.Completed],
    });
    expect(completed.map((s) => s.instanceId)).toEqual(["a2", "a4"]);
    expect(last().query).toBe(`?createdTimeFrom=${from.toISOString()}&runtimeStatus=Completed`);

    const prefixed = await fetch(api("instances?instanceIdPrefix=a&top=3&runtimeStatus=Running,Canceled"));
    expect(prefixed.headers.get("x-ms-continuation-token")).toBeNull();
    expect(((await prefixed.json()) as { instanceId: string }[]).map((s) => s.instanceId)).toEqual([
      "a1",
      "a3",
      "a5",
    ]);
  });

  it("raiseEvent: 202 to a live instance, 410 (resolved) to a finished one, 404 (rejected) to none", async () => {
    await started("hello", "e1");
    await client.raiseEvent("e1", "finish", { approved: true });
    expect(last()).toMatchObject({
      method: "POST",
      path: "/runtime/webhooks/durabletask/instances/e1/raiseEvent/finish",
      body: '{"approved":true}',
    });
    // The orchestration got the event's data: it completes with it.
    expect(await ah.until("e1", isStatus("Completed"))).toMatchObject({ output: { approved: true } });

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
    await ah.until("t1", isStatus("Suspended"));
    expect((await client.getStatus("t1")).runtimeStatus).toBe("Suspended");
    await client.resume("t1", "done");
    await ah.until("t1", isStatus("Running"));
    expect((await client.getStatus("t1")).runtimeStatus).toBe("Running");
    expect(await history("t1")).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ EventType: "ExecutionSuspended", Reason: "maintenance window" }),
        expect.objectContaining({ EventType: "ExecutionResumed", Reason: "done" }),
      ]),
    );
    await client.terminate("t1", "no longer needed");
    await ah.until("t1", isStatus("Terminated"));
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
    await end("p1", "finish", "x");
    expect(await client.purgeInstanceHistory("p1")).toEqual({ instancesDeleted: 1 });
    expect(last()).toMatchObject({ method: "DELETE", path: "/runtime/webhooks/durabletask/instances/p1" });
    expect(await client.purgeInstanceHistory("p1")).toEqual({ instancesDeleted: 0 });
  });

  it("purgeInstanceHistoryBy sends createdTimeFrom/createdTimeTo/runtimeStatus; nothing matched → 0", async () => {
    for (const id of ["q1", "q2", "q3"]) await started("hello", id);
    await end("q1", "finish", 1);
    await end("q2", "fail", "x");
    const from = new Date(ah.clock.now() - 60_000);
    const to = new Date(ah.clock.now() + 60_000);
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
    expect(await client.purgeInstanceHistoryBy({ createdTimeFrom: from })).toEqual({ instancesDeleted: 0 });
    expect(await ah.ids()).toEqual(["q3"]);
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
    await end("c1", "finish", { greeting: "hi" });
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
    expect(await ah.until("c2", isStatus("Terminated"))).toMatchObject({ output: "stop" });
  });

  it("waitForCompletionOrCreateCheckStatusResponse polls getStatus: output when done, else check-status", async () => {
    await started("hello", "w1");
    const request = new HttpRequest({ method: "POST", url: `${server.baseUrl}/api/start` });
    const polls = () => server.seen.filter((r) => r.path.endsWith("/instances/w1")).length;
    const waited = client.waitForCompletionOrCreateCheckStatusResponse(request, "w1", {
      timeoutInMilliseconds: WAIT_MS,
      retryIntervalInMilliseconds: 10,
    });
    await vi.waitFor(() => expect(polls()).toBeGreaterThan(0), { timeout: WAIT_MS });
    await end("w1", "finish", { total: 3 });
    const done = await waited;
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ total: 3 });
    expect(polls()).toBeGreaterThanOrEqual(2); // one before the end, the one that saw it

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
    await waiting();
    await hub.raiseEvent("cw1", "finish", JSON.stringify(["a", "b"]));
    const done = await completing;
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual(["a", "b"]);

    // The deadline is the handler's clock: past it, the hub's next wake-up ends the wait with check-status.
    const timingOut = fetch(uri("cw2"), { method: "POST" });
    await waiting();
    await ah.clock.advance(30_000);
    const late = await timingOut;
    expect(late.status).toBe(202);
    expect(late.headers.get("location")).toBe(`${api("instances/cw2")}?taskHub=${HUB}&connection=Storage`);

    const failing = fetch(uri("cw3"), { method: "POST" });
    await waiting();
    await hub.raiseEvent("cw3", "fail", JSON.stringify("broken"));
    const failed = await failing;
    expect(failed.status).toBe(200);
    expect(await failed.json()).toMatchObject({
      runtimeStatus: "Failed",
      output: "Orchestrator function 'hello' failed: broken",
    });

    // A client that goes away ends the wait (the request's signal), not the timeout (the clock stands still).
    const leaving = new AbortController();
    const gone = fetch(uri("cw4"), { method: "POST", signal: leaving.signal }).catch(() => "aborted");
    await waiting();
    leaving.abort();
    expect(await gone).toBe("aborted");
    await waiting(0);
    expect((await hub.getStatus("cw4"))?.runtimeStatus).toBe("Running");
  });

  it("restart starts the orchestration again with its input (same id on request)", async () => {
    await started("hello", "r1", { n: 1 });
    await end("r1", "finish", "ok");
    const res = await fetch(api("instances/r1/restart?restartWithNewInstanceId=false"), { method: "POST" });
    expect(res.status).toBe(202);
    expect(((await res.json()) as { id: string }).id).toBe("r1");
    expect(await ah.until("r1", isStatus("Running"))).toMatchObject({ name: "hello", input: { n: 1 } });
    const fresh = await fetch(api("instances/r1/restart"), { method: "POST" });
    const freshId = ((await fresh.json()) as { id: string }).id;
    expect(freshId).toMatch(GENERATED);
    expect(await hub.getStatus(freshId)).toMatchObject({ name: "hello", input: { n: 1 } });
    expect((await fetch(api("instances/zz/restart"), { method: "POST" })).status).toBe(400);
  });

  it("rewind is refused with clear errors the SDK surfaces", async () => {
    ah.hold("rw");
    await started("hello", "rw");
    await expect(client.rewind("rw", "retry")).rejects.toThrow(
      'This orchestration has status Pending, but only orchestrations in the "Failed" state can be rewound.',
    );
    ah.release("rw");
    await end("rw", "fail", "x");
    await expect(client.rewind("rw", "retry")).rejects.toThrow("Rewind is not supported by the dev host");
  });

  it("the client's readEntityState and signalEntity reach the hub's entities", async () => {
    const stateOf = async (key: string) => (await hub.readEntity("counter", key))?.state;
    await client.signalEntity(new df.EntityId("counter", "k1"), "add", 7);
    await vi.waitFor(async () => expect(await stateOf("k1")).toBe("7"), { timeout: WAIT_MS });
    expect(await client.readEntityState(new df.EntityId("Counter", "k1"))).toMatchObject({
      entityExists: true,
      entityState: 7,
    });
    expect((await client.readEntityState(new df.EntityId("counter", "none"))).entityExists).toBe(false);
    await client.signalEntity(new df.EntityId("counter", "k1"), "add", 1);
    await vi.waitFor(async () => expect(await stateOf("k1")).toBe("8"), { timeout: WAIT_MS });
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
    // The memory store's reason (the fake's was "Malformed continuation token").
    expect(((await res.json()) as { Message: string }).Message).toMatch(
      /Invalid continuation token 'garbage': not a token of this task hub's list/,
    );
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
    const broken = hubOverFaultyStore(HUB, { readInstance: new Error("Cosmos DB is unreachable") });
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
  /** A handler over a hub whose store throws `error` when getStatus, list and startNew reach it. */
  function throwing(error: unknown) {
    errors.length = 0;
    const broken = hubOverFaultyStore(HUB, {
      readInstance: error,
      queryInstances: error,
      createInstance: error,
    });
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
    // A store that fails when reached: a refusal at the door is a 400, a request that reached it a 500.
    const unreachable = createDurableApiHandler({
      hub: hubOverFaultyStore(HUB, { queryInstances: new Error("the store was reached") }),
      baseUrl: server.baseUrl,
    });
    for (const token of ["tök", "a\u0000b", "x".repeat(MAX_CONTINUATION_TOKEN_CHARS + 1)]) {
      const res = await direct(unreachable, "GET", "instances", {
        headers: { "x-ms-continuation-token": token },
      });
      expect(res).toMatchObject({ status: 400, body: { code: "InvalidContinuationToken" } });
    }
    const longest = "x".repeat(MAX_CONTINUATION_TOKEN_CHARS);
    const passes = await direct(unreachable, "GET", "instances", {
      headers: { "x-ms-continuation-token": longest },
    });
    expect(passes).toMatchObject({ status: 500, body: { code: "TaskHubFailure" } }); // reached the store
    // The memory store refuses it with its own reason (the fake's was "Malformed continuation token").
    const res = await direct(createDurableApiHandler({ hub, baseUrl: server.baseUrl }), "GET", "instances", {
      headers: { "x-ms-continuation-token": longest },
    });
    expect(res).toMatchObject({ status: 400, body: { code: "InvalidContinuationToken" } });
    expect(res.body.Message).toMatch(/Invalid continuation token 'x+': not a token of this task hub's list/);
  });

  it("top: 1 … 1000 is a page size; 0, 1001 and a huge number are 400", async () => {
    const handler = createDurableApiHandler({ hub, baseUrl: server.baseUrl });
    for (const id of ["t1", "t2", "t3"]) await hub.startNew("other", { instanceId: id });
    // The page holds `top` instances: 1 and a token for the rest, or all 3 and none.
    const pageOf = async (top: string) => {
      const out = await handler({
        method: "GET",
        path: "/runtime/webhooks/durabletask/instances",
        query: new URLSearchParams({ top }),
        headers: {},
        body: new Uint8Array(),
      });
      expect(out?.status).toBe(200);
      const ids = (JSON.parse(out?.body ?? "[]") as { instanceId: string }[]).map((s) => s.instanceId);
      return { ids, more: out?.headers["x-ms-continuation-token"] !== undefined };
    };
    expect(await pageOf("1")).toEqual({ ids: ["t1"], more: true });
    expect(await pageOf("1000")).toEqual({ ids: ["t1", "t2", "t3"], more: false });
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
    // Nothing over the limit reached the hub (its list is in instance id order).
    expect(await ah.ids()).toEqual(["at-four", "at-one", "at-two"]);
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
    expect(await ah.ids()).toEqual(["deep-ok", "deep-str"]);
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
    expect(await ah.ids()).toEqual([]);
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
    // One event reached the instance: the one at the limit.
    const raised = async () => (await history("ev")).filter((e) => e.EventType === "EventRaised");
    await vi.waitFor(async () => expect(await raised()).toHaveLength(1), { timeout: WAIT_MS });
    expect((await raised())[0]).toMatchObject({ Name: "Go" });
  });

  it("terminate / suspend / resume: a reason whose JSON is at the limit passes, one byte more is 413", async () => {
    for (const operation of ["suspend", "resume", "terminate"] as const) {
      const id = `r-${operation}`;
      await started("hello", id);
      await ah.until(id, isStatus("Running"));
      if (operation === "resume") {
        await hub.suspend(id, null);
        await ah.until(id, isStatus("Suspended"));
      }
      // The reason is stored as JSON text: its quotes count.
      const over = await direct(
        limited,
        "POST",
        `instances/r-${operation}/${operation}?reason=${"x".repeat(MAX - 1)}`,
      );
      expect(over).toMatchObject({ status: 413, body: tooLarge(`The ${operation} reason`, MAX + 1) });
      const at = await direct(
        limited,
        "POST",
        `instances/r-${operation}/${operation}?reason=${"x".repeat(MAX - 2)}`,
      );
      expect(at.status).toBe(202);
      // Only the reason at the limit reached the instance.
      const reason = "x".repeat(MAX - 2);
      if (operation === "terminate") {
        expect(await ah.until(id, isStatus("Terminated"))).toMatchObject({ output: reason });
      } else {
        const type = operation === "suspend" ? "ExecutionSuspended" : "ExecutionResumed";
        await ah.until(id, isStatus(operation === "suspend" ? "Suspended" : "Running"));
        const events = (await history(id)).filter((e) => e.EventType === type);
        expect(events.map((e) => e.Reason)).toEqual([reason]);
      }
    }
  });

  it("restart: an input over the (since lowered) limit is 413; at the limit it starts again", async () => {
    await started("hello", "big", "y".repeat(MAX - 2 + 1)); // stored as MAX + 1 bytes of JSON
    await started("hello", "fits", "y".repeat(MAX - 2));
    await end("big", "finish", 1);
    await end("fits", "finish", 1);
    const over = await direct(limited, "POST", "instances/big/restart");
    expect(over).toMatchObject({ status: 413, body: tooLarge("The restarted instance's input", MAX + 1) });
    const again = await direct(limited, "POST", "instances/fits/restart");
    expect(again.status).toBe(202);
    expect((await ah.ids()).sort()).toEqual(["big", "fits", (again.body as { id: string }).id].sort());
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
  it("1,000 waits ended by timeout or abort answer 202 and leave 0 waiters in the hub and 0 abort listeners", async () => {
    const handler = createDurableApiHandler({
      hub,
      baseUrl: "http://127.0.0.1:1",
      isOrchestrator: (n) => ORCHESTRATORS.has(n),
      now: () => ah.clock.now(),
    });
    // Requests that time out share one signal that is never aborted: a listener left per request would pile up.
    const shared = new AbortController();
    const own: AbortController[] = [];
    const pending = Array.from({ length: 1_000 }, (_v, i) => {
      const byAbort = i % 2 === 1;
      const mine = new AbortController();
      if (byAbort) own.push(mine);
      return direct(handler, "POST", `orchestrators/hello/w${i}?timeout=30`, {
        signal: byAbort ? mine.signal : shared.signal,
      });
    });
    // Every request waits on the hub (one wait each, held by the hub: the API has none of its own).
    await waiting(1_000);
    for (const c of own) c.abort();
    await ah.clock.advance(30_000); // the others' deadline: the hub's next wake-up ends them
    for (const res of await Promise.all(pending)) expect(res.status).toBe(202);
    for (const c of own) expect(getEventListeners(c.signal, "abort")).toHaveLength(0);
    expect(getEventListeners(shared.signal, "abort")).toHaveLength(0);
    expect(hub.waiterCount).toBe(0);
  });

  it("a change wakes the wait; a change that does not finish it waits again, until the end or the deadline", async () => {
    const handler = createDurableApiHandler({
      hub,
      baseUrl: "http://127.0.0.1:1",
      isOrchestrator: (n) => ORCHESTRATORS.has(n),
      now: () => ah.clock.now(),
    });
    let answered = false;
    const pending = direct(handler, "POST", "orchestrators/hello/ch1?timeout=60").finally(() => {
      answered = true;
    });
    await waiting();
    await ah.clock.advance(10_000);
    // A change, not the end: the request reads it and waits again.
    await hub.suspend("ch1", null);
    await ah.until("ch1", isStatus("Suspended"));
    await waiting();
    expect(answered).toBe(false);
    await hub.resume("ch1", null);
    await hub.raiseEvent("ch1", "finish", JSON.stringify("done"));
    expect(await pending).toMatchObject({ status: 200, body: "done" });
    expect(hub.waiterCount).toBe(0);

    // The time left after a change: 50 of the 60 s pass, then a change, then the other 10 s end the wait.
    let lateAnswered = false;
    const late = direct(handler, "POST", "orchestrators/hello/ch2?timeout=60").finally(() => {
      lateAnswered = true;
    });
    await waiting();
    await ah.clock.advance(50_000);
    await hub.suspend("ch2", null);
    await ah.until("ch2", isStatus("Suspended"));
    await waiting();
    expect(lateAnswered).toBe(false);
    await ah.clock.advance(10_000);
    expect((await late).status).toBe(202);
    expect(hub.waiterCount).toBe(0);
  });
});
