/**
 * The dev host runs an unmodified Durable Functions app (test/fixtures/app-durable: plain durable-functions APIs,
 * the quickstart's HTTP starter + fan-out/fan-in) end to end over real sockets: the starter's
 * createCheckStatusResponse links are polled as a client would, external events arrive through another function's
 * durable client, waitForCompletionOrCreateCheckStatusResponse returns the output.
 */
import { fileURLToPath } from "node:url";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import type { LogRecord, StartedApp } from "../../packages/devhost/src/index.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable", import.meta.url));
let started: StartedApp;
let host: InProcessDevHost;
const logs: LogRecord[] = [];

beforeAll(async () => {
  host = await startInProcessDevHost({
    appDir,
    dataDirPrefix: "durable-devhost-",
    logSink: (r) => logs.push(r),
  });
  started = host.started;
});

afterAll(async () => {
  await host?.stop();
});

/** The status URL's answer once it is not 202 (the instance ended), through the shared wait (bench/lib/until.ts). */
const poll = (url: string): Promise<{ status: number; body: Record<string, unknown> }> =>
  until(`${url} to answer other than 202`, async () => {
    const res = await fetch(url);
    const body = (await res.json()) as Record<string, unknown>;
    return res.status === 202 ? undefined : { status: res.status, body };
  });

describe("dev host: Durable Functions", () => {
  it("an HTTP starter's createCheckStatusResponse leads to the orchestration's output", async () => {
    const base = started.host.baseUrl;
    const res = await fetch(`${base}/api/orchestrators/fanOutFanIn`, {
      method: "POST",
      body: JSON.stringify(["Oslo", "Lima"]),
    });
    expect(res.status).toBe(202);
    const links = (await res.json()) as Record<string, string>;
    expect(res.headers.get("location")).toBe(links.statusQueryGetUri);
    // The links name this host (its real port), the task hub from host.json's %FIXTURE_HUB%.
    expect(
      links.statusQueryGetUri.startsWith(`${base}/runtime/webhooks/durabletask/instances/${links.id}`),
    ).toBe(true);
    expect(links.statusQueryGetUri).toContain("taskHub=FixtureHub");
    const done = await poll(links.statusQueryGetUri);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      name: "fanOutFanIn",
      runtimeStatus: "Completed",
      input: ["Oslo", "Lima"],
      customStatus: { stage: "done" },
      output: { greetings: ["Hello, Oslo!", "Hello, Lima!"], recovered: `recovered ${links.id}` },
    });
    const lines = logs.map((l) => l.message);
    expect(lines.some((m) => m.includes("Executing 'Functions.fanOutFanIn'"))).toBe(true);
    expect(lines.some((m) => m.includes("Executed 'Functions.unreliable' (Failed"))).toBe(true);
    expect(lines.some((m) => m.includes("storageProvider (AzureStorage) is for Azure"))).toBe(true);
  });

  it("an external event raised through another function's durable client", async () => {
    const base = started.host.baseUrl;
    const res = await fetch(`${base}/api/orchestrators/waitForApproval`, { method: "POST" });
    const links = (await res.json()) as Record<string, string>;
    const approve = await fetch(`${base}/api/approve/${links.id}`, {
      method: "POST",
      body: JSON.stringify("ann"),
    });
    expect(approve.status).toBe(200);
    const done = await poll(links.statusQueryGetUri);
    expect(done.body).toMatchObject({ runtimeStatus: "Completed", output: { approved: true, by: "ann" } });
  });

  it("waitForCompletionOrCreateCheckStatusResponse returns the output", async () => {
    const res = await fetch(`${started.host.baseUrl}/api/wait/fanOutFanIn`, { method: "POST" });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ greetings: ["Hello, Oslo!"] });
  });

  it("the HTTP API: unknown instance 404, unknown orchestrator 400, bad body 400, terminate, purge", async () => {
    const api = `${started.host.baseUrl}/runtime/webhooks/durabletask`;
    expect((await fetch(`${api}/instances/nope`)).status).toBe(404);
    expect((await fetch(`${api}/orchestrators/noSuchOrchestrator`, { method: "POST" })).status).toBe(400);
    expect(
      (
        await fetch(`${api}/orchestrators/fanOutFanIn`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{not json",
        })
      ).status,
    ).toBe(400);
    const start = await fetch(`${api}/orchestrators/waitForApproval/term-1`, { method: "POST" });
    expect(start.status).toBe(202);
    expect((await fetch(`${api}/instances/term-1/terminate?reason=stop`, { method: "POST" })).status).toBe(
      202,
    );
    const done = await poll(`${api}/instances/term-1`);
    expect(done.body).toMatchObject({ runtimeStatus: "Terminated", output: "stop" });
    expect((await fetch(`${api}/instances/term-1/raiseEvent/approve`, { method: "POST" })).status).toBe(410);
    const purge = await fetch(`${api}/instances/term-1`, { method: "DELETE" });
    expect(await purge.json()).toEqual({ instancesDeleted: 1 });
    expect((await fetch(`${api}/entities/counter/one`)).status).toBe(404);
  });

  it("sub-orchestrations (named and unnamed) and continueAsNew through the Cosmos DB task hub", async () => {
    const base = started.host.baseUrl;
    const res = await fetch(`${base}/api/orchestrators/greetAll`, { method: "POST" });
    const links = (await res.json()) as Record<string, string>;
    const done = await poll(links.statusQueryGetUri);
    expect(done.body).toMatchObject({
      runtimeStatus: "Completed",
      output: { named: ["Hello, Rome!"], unnamed: "liftoff" },
    });
    const child = await poll(links.statusQueryGetUri.replace(links.id, `${links.id}-child`));
    expect(child.body).toMatchObject({ name: "fanOutFanIn", runtimeStatus: "Completed" });
  });

  it("the SDK client's getStatusBy, getStatusAll, terminate and purgeInstanceHistory", async () => {
    const base = started.host.baseUrl;
    const start = await fetch(`${base}/api/orchestrators/waitForApproval`, { method: "POST" });
    const { id } = (await start.json()) as { id: string };
    expect((await fetch(`${base}/api/manage/terminate/${id}`, { method: "POST" })).status).toBe(202);
    const api = `${base}/runtime/webhooks/durabletask/instances/${id}`;
    expect((await poll(api)).body).toMatchObject({
      runtimeStatus: "Terminated",
      output: "stopped by manage",
    });
    const completed = (await (
      await fetch(`${base}/api/manage/completed`, { method: "POST" })
    ).json()) as string[];
    expect(completed.length).toBeGreaterThan(0);
    expect(completed).not.toContain(id);
    const all = (await (await fetch(`${base}/api/manage/all`, { method: "POST" })).json()) as string[];
    expect(all).toContain(id);
    const purged = await (await fetch(`${base}/api/manage/purge/${id}`, { method: "POST" })).json();
    expect(purged).toEqual({ instancesDeleted: 1 });
    expect((await fetch(api)).status).toBe(404);
  });

  it("fuzz: any path, method, query and body under the durable API answers 4xx/2xx (or 501), never 500 (fixed seed)", async () => {
    const api = `${started.host.baseUrl}/runtime/webhooks/durabletask/`;
    const segment = fc.oneof(
      fc.constantFrom(
        "orchestrators",
        "instances",
        "raiseEvent",
        "terminate",
        "suspend",
        "resume",
        "rewind",
        "entities",
        "fanOutFanIn",
        "waitForApproval",
        "%",
        "%E0%A4%A",
        "..",
        "x".repeat(120),
      ),
      fc.string({ maxLength: 12 }).map(encodeURIComponent),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(segment, { minLength: 0, maxLength: 4 }),
        fc.constantFrom("GET", "POST", "DELETE", "PUT"),
        fc.dictionary(
          fc.constantFrom(
            "showHistory",
            "showInput",
            "top",
            "runtimeStatus",
            "createdTimeFrom",
            "timeout",
            "taskHub",
            "reason",
          ),
          fc.string({ maxLength: 10 }),
        ),
        fc.oneof(fc.constant(""), fc.json(), fc.string({ maxLength: 20 })),
        async (parts, method, query, body) => {
          const qs = new URLSearchParams(query).toString();
          const res = await fetch(`${api}${parts.join("/")}${qs ? `?${qs}` : ""}`, {
            method,
            ...(method === "GET" ? {} : { body }),
          });
          await res.arrayBuffer();
          // 501 is the deliberate "not supported by the dev host" (entities, rewind); never a 500.
          expect(res.status === 501 || res.status < 500).toBe(true);
        },
      ),
      { seed: 20261125, numRuns: 80 },
    );
  });
});
