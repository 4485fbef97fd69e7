/**
 * The dev host runs test/fixtures/app-durable-http unmodified (its functions in the worker process, the durable HTTP
 * API over loopback): callHttp against a loopback server (200, a 202 polled to completion, 500 as a response, a
 * timeout the orchestrator catches), restart end to end (same id and a new one), entities (a client's signalEntity
 * and readEntityState, an orchestration's callEntity, the API's entity routes and listing, a critical section: lock,
 * isLocked, callEntity under the lock, release), and what the dev host does not support — rewind — answered with the
 * API named and "a limit of this dev host" in the body, no file links.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../bench/lib/until.js";
import type { LogRecord } from "../../packages/devhost/src/index.js";
import { type InProcessDevHost, startInProcessDevHost } from "../support/dev-host.js";

const appDir = fileURLToPath(new URL("../fixtures/app-durable-http", import.meta.url));
let host: InProcessDevHost;
let base: string;
let api: string;
const logs: LogRecord[] = [];
let server: Server;
let target: string;
const requests: string[] = [];
const hung = new Set<ServerResponse>();
let polls = 0;
const LIMIT = /a limit of this dev host/;

beforeAll(async () => {
  server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    req.on("end", () => {
      if (req.url === "/start") {
        res.writeHead(202, { Location: `${target}/status`, "Retry-After": "1" });
        res.end();
      } else if (req.url === "/status") {
        polls++;
        if (polls < 2) {
          res.writeHead(202, { Location: `${target}/status`, "Retry-After": "1" });
          res.end();
        } else res.end("finished");
      } else if (req.url === "/boom") {
        res.writeHead(500);
        res.end("broken");
      } else if (req.url === "/hang") hung.add(res);
      else res.end(`hello ${req.url}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  target = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  host = await startInProcessDevHost({
    appDir,
    dataDirPrefix: "durable-http-devhost-",
    logSink: (r) => logs.push(r),
  });
  base = host.started.host.baseUrl;
  api = `${base}/runtime/webhooks/durabletask`;
});

afterAll(async () => {
  await host?.stop();
  for (const res of hung) res.destroy();
  await new Promise((r) => server?.close(r));
});

/** The status URL's answer once it is not 202 (the instance ended), through the shared wait (bench/lib/until.ts). */
const poll = (url: string): Promise<{ status: number; body: Record<string, unknown> }> =>
  until(`${url} to answer other than 202`, async () => {
    const res = await fetch(url);
    const body = (await res.json()) as Record<string, unknown>;
    return res.status === 202 ? undefined : { status: res.status, body };
  });

async function start(name: string, input?: unknown): Promise<Record<string, string>> {
  const res = await fetch(`${base}/api/orchestrators/${name}`, {
    method: "POST",
    ...(input === undefined ? {} : { body: JSON.stringify(input) }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as Record<string, string>;
}

describe("dev host: callHttp", () => {
  it("a 200 with method and body as sent", async () => {
    const links = await start("callUrl", { method: "POST", url: `${target}/hello`, body: { a: 1 } });
    const done = await poll(links.statusQueryGetUri);
    expect(done.body).toMatchObject({
      runtimeStatus: "Completed",
      output: { statusCode: 200, content: "hello /hello" },
    });
    expect(requests).toContain("POST /hello");
  });

  it("a 202 + Location polled with a durable timer until the final response", async () => {
    polls = 0;
    const links = await start("callUrl", { method: "POST", url: `${target}/start` });
    const done = await poll(links.statusQueryGetUri);
    expect(done.body).toMatchObject({
      runtimeStatus: "Completed",
      output: { statusCode: 200, content: "finished" },
    });
    expect(polls).toBe(2);
  });

  it("a 500 is a response; a timeout (DURABLE_HTTP_TIMEOUT_MS) fails the task the orchestrator catches", async () => {
    const boom = await poll(
      (await start("callUrl", { method: "GET", url: `${target}/boom` })).statusQueryGetUri,
    );
    expect(boom.body).toMatchObject({ output: { statusCode: 500, content: "broken" } });
    const hang = await poll(
      (await start("callUrl", { method: "GET", url: `${target}/hang` })).statusQueryGetUri,
    );
    expect(String((hang.body.output as { failed: string }).failed)).toContain(
      "no complete response within 1000 ms (DURABLE_HTTP_TIMEOUT_MS",
    );
  });
});

describe("dev host: restart and what is not supported", () => {
  it("restart runs the orchestration again with its input, under the same id or a new one", async () => {
    const links = await start("callUrl", { method: "GET", url: `${target}/again` });
    expect((await poll(links.statusQueryGetUri)).body.runtimeStatus).toBe("Completed");
    const before = requests.filter((r) => r === "GET /again").length;
    const same = await fetch(`${links.restartPostUri}&restartWithNewInstanceId=false`, { method: "POST" });
    expect(same.status).toBe(202);
    const sameLinks = (await same.json()) as Record<string, string>;
    expect(sameLinks.id).toBe(links.id);
    const fresh = await fetch(links.restartPostUri, { method: "POST" });
    expect(fresh.status).toBe(202);
    const freshLinks = (await fresh.json()) as Record<string, string>;
    expect(freshLinks.id).not.toBe(links.id);
    for (const l of [sameLinks, freshLinks]) {
      expect((await poll(l.statusQueryGetUri)).body).toMatchObject({
        runtimeStatus: "Completed",
        output: { statusCode: 200, content: "hello /again" },
      });
    }
    expect(requests.filter((r) => r === "GET /again").length).toBe(before + 2);
  });

  it("rewind answers 501 with the reason in the body", async () => {
    const links = await start("alwaysFails");
    expect((await poll(links.statusQueryGetUri)).body.runtimeStatus).toBe("Failed");
    const res = await fetch(links.rewindPostUri.replace("{text}", "retry"), { method: "POST" });
    expect(res.status).toBe(501);
    const text = await res.text();
    expect(text).toContain("rewind");
    expect(text).toMatch(LIMIT);
    expect(text).not.toContain("docs/");
  });

  it("entities: a client's signalEntity and readEntityState, an orchestration's callEntity, the HTTP API's routes", async () => {
    expect((await fetch(`${base}/api/counter/k1`, { method: "POST" })).status).toBe(202);
    const links = await start("useCounter");
    expect((await poll(links.statusQueryGetUri)).body).toMatchObject({
      runtimeStatus: "Completed",
      output: "added",
    });
    // The signal and the call are two senders: both are applied (the signal's work item may run after the call's).
    const read = await until("the counter to read 2", async () => {
      const r = (await (await fetch(`${base}/api/counter/k1`)).json()) as { entityState?: number };
      return r.entityState === 2 ? r : undefined;
    });
    expect(read).toEqual({ entityExists: true, entityState: 2 });
    const route = await fetch(`${api}/entities/counter/k1`);
    expect(route.status).toBe(200);
    expect(await route.json()).toBe(2);
    const signal = await fetch(`${api}/entities/counter/k1?op=add`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "5",
    });
    expect(signal.status).toBe(202);
    expect((await fetch(`${api}/entities/counter/nobody`)).status).toBe(404);
    expect(await (await fetch(`${base}/api/counter/nobody`)).json()).toMatchObject({ entityExists: false });
  });

  it("entities: the extension's listing and an entity's instance status", async () => {
    expect((await fetch(`${base}/api/counter/listed`, { method: "POST" })).status).toBe(202);
    const listed = await until("the entity 'listed' in the listing", async () => {
      const res = await fetch(`${api}/entities/counter?fetchState=true`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as { entityId: { name: string; key: string }; state: unknown }[];
      return page.some((e) => e.entityId.key === "listed") ? page : undefined;
    });
    expect(listed.find((e) => e.entityId.key === "listed")).toMatchObject({
      entityId: { name: "counter", key: "listed" },
      state: 1,
    });
    const status = await fetch(`${api}/instances/@counter@listed`);
    expect(status.status).toBe(202);
    expect(await status.json()).toMatchObject({
      name: "counter",
      runtimeStatus: "Running",
      input: { exists: true, state: "1" },
      customStatus: { entityExists: true },
    });
    expect((await fetch(`${api}/entities?top=0`)).status).toBe(400);
  });

  it("a critical section: lock, isLocked, callEntity under the lock, release", async () => {
    const links = await start("useLock");
    const done = await poll(links.statusQueryGetUri);
    expect(done.body).toMatchObject({
      runtimeStatus: "Completed",
      output: { before: false, inside: ["counter@locked"], after: false, value: 1 },
    });
    expect(await (await fetch(`${api}/entities/counter/locked`)).json()).toBe(1);
  });
});
