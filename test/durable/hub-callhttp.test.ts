/**
 * context.df.callHttp through the task hub (emulator, real durable-functions orchestrators), as the Durable extension
 * runs it for out-of-process apps: each CallHttp action is one BuiltIn::HttpActivity task; with
 * asynchronousPatternEnabled a 202 + Location is polled by the SDK with a durable timer (Retry-After) between polls
 * until the final response; a 500 is a response; a timeout fails the task (the orchestrator catches it).
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Database } from "@azure/cosmos";

type DurableHttpResponse = { statusCode: number; content?: string };

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CosmosTaskHub } from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import { startTestEmulator, type TestEmulator, uniqueName } from "../support/emulator.js";
import {
  createHub,
  type Gen,
  historyOf,
  hubContainers,
  isFinished,
  stopAll,
  waitForStatus,
} from "./hub-harness.js";

let t: TestEmulator;
let db: Database;
let server: Server;
let base: string;
const hubs: CosmosTaskHub[] = [];
const hung = new Set<ServerResponse>();
/** Requests the server saw, in order ("METHOD /path"). */
const requests: string[] = [];
let polls = 0;

beforeAll(async () => {
  t = await startTestEmulator();
  db = (await t.client.databases.create({ id: uniqueName("durable-http") })).database;
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => {
      if (req.url === "/start") {
        res.writeHead(202, { Location: `${base}/status`, "Retry-After": "1" });
        res.end();
      } else if (req.url === "/status") {
        polls++;
        if (polls < 3) {
          res.writeHead(202, { Location: `${base}/status`, "Retry-After": "1" });
          res.end();
        } else res.end(JSON.stringify({ done: true, polls }));
      } else if (req.url === "/boom") {
        res.writeHead(500);
        res.end("broken");
      } else if (req.url === "/hang") hung.add(res);
      else res.end("ok");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await stopAll(hubs);
  for (const res of hung) res.destroy();
  await new Promise((r) => server.close(r));
  await t?.close();
});

const orchestrators: Record<string, Gen> = {
  poll: function* (ctx) {
    const res = (yield ctx.df.callHttp({
      method: "POST",
      url: `${base}/start`,
      body: { n: 1 },
    })) as DurableHttpResponse;
    return { status: res.statusCode, content: JSON.parse(res.content as string) };
  },
  noPolling: function* (ctx) {
    const res = (yield ctx.df.callHttp({
      method: "POST",
      url: `${base}/start`,
      enablePolling: false,
    })) as DurableHttpResponse;
    return res.statusCode;
  },
  boom: function* (ctx) {
    const res = (yield ctx.df.callHttp({ method: "GET", url: `${base}/boom` })) as DurableHttpResponse;
    return { status: res.statusCode, content: res.content };
  },
  hang: function* (ctx) {
    try {
      yield ctx.df.callHttp({ method: "GET", url: `${base}/hang` });
      return "answered";
    } catch (e) {
      return `caught: ${(e as Error).message}`;
    }
  },
};

// Only the hang test needs the HTTP timeout short; for the others a loopback answer slower than that on a busy
// machine would fail the task, so their bound is far above any such delay.
async function startedHub(log: string[], httpTimeoutMs = 120_000): Promise<CosmosTaskHub> {
  const hub = createHub({
    ...(await hubContainers(db)),
    orchestrators,
    activities: {},
    log,
    options: { httpTimeoutMs },
  });
  hubs.push(hub);
  await hub.start();
  return hub;
}

describe("callHttp on the task hub", () => {
  it("polls a 202 + Location with durable timers between polls until the final response", async () => {
    const log: string[] = [];
    const hub = await startedHub(log);
    requests.length = 0;
    polls = 0;
    const id = `poll-${uniqueName("i")}`;
    await hub.startNew("poll", { instanceId: id, input: null });
    const status = await waitForStatus(hub, id, isFinished, log);
    expect(status.runtimeStatus).toBe("Completed");
    expect(status.output).toEqual({ status: 200, content: { done: true, polls: 3 } });
    expect(requests).toEqual(["POST /start", "GET /status", "GET /status", "GET /status"]);
    const history = await historyOf(hub, id);
    const kinds = history
      .filter((e) => e.EventType === "TaskScheduled" || e.EventType === "TimerCreated")
      .map((e) => (e.EventType === "TaskScheduled" ? e.Name : "timer"));
    expect(kinds).toEqual([
      "BuiltIn::HttpActivity",
      "timer",
      "BuiltIn::HttpActivity",
      "timer",
      "BuiltIn::HttpActivity",
      "timer",
      "BuiltIn::HttpActivity",
    ]);
  });

  it("returns the 202 itself when polling is off", async () => {
    const hub = await startedHub([]);
    requests.length = 0;
    const id = `noPolling-${uniqueName("i")}`;
    await hub.startNew("noPolling", { instanceId: id, input: null });
    const status = await waitForStatus(hub, id, isFinished);
    expect(status.output).toBe(202);
    expect(requests).toEqual(["POST /start"]);
  });

  it("gives the orchestrator a 500 as a response", async () => {
    const hub = await startedHub([]);
    const id = `boom-${uniqueName("i")}`;
    await hub.startNew("boom", { instanceId: id, input: null });
    const status = await waitForStatus(hub, id, isFinished);
    expect(status.runtimeStatus).toBe("Completed");
    expect(status.output).toEqual({ status: 500, content: "broken" });
  });

  it("fails the task of a request that times out; the orchestrator catches it", async () => {
    const hub = await startedHub([], 500);
    const id = `hang-${uniqueName("i")}`;
    await hub.startNew("hang", { instanceId: id, input: null });
    const status = await waitForStatus(hub, id, isFinished);
    expect(status.runtimeStatus).toBe("Completed");
    expect(String(status.output)).toMatch(
      /^caught: .*no complete response within 500 ms \(DURABLE_HTTP_TIMEOUT_MS/,
    );
  });
});
