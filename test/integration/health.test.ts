import { HttpRequest, InvocationContext, type LogLevel } from "@azure/functions";
import { afterAll, beforeAll, expect, it } from "vitest";
import { getHealth } from "../../functions/admin.js";
import { ensureContainers } from "../../src/shared/containers.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

// GET /api/health is the one route a deployment leaves anonymous (infra/bicep, authsettingsV2 excludedPaths), so its
// answer says healthy or unhealthy and nothing else; what is wrong goes to the invocation's log (the host log).
// The functions' own path, on the emulator over a socket: no container, then a bad connection, then all of them.

let t: TestEmulator;
beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_ENSURE_CONTAINERS = "false";
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  delete process.env.COSMOS_ENSURE_CONTAINERS;
  await t?.close();
});

async function probe() {
  const logged: { level: LogLevel; line: string }[] = [];
  const context = new InvocationContext({
    logHandler: (level, ...args) => logged.push({ level, line: args.map(String).join(" ") }),
  });
  const res = await getHealth(
    new HttpRequest({ method: "GET", url: "http://localhost:7071/api/health" }),
    context,
  );
  return { res, logged };
}

it("a connection that cannot be used: 503 unhealthy, the reason in the log only", async () => {
  process.env.COSMOS_CONNECTION = "AccountEndpoint=ftp://cosmos.invalid/;AccountKey=c2VjcmV0;";
  const { res, logged } = await probe();
  expect(res.status).toBe(503);
  expect(res.jsonBody).toEqual({ status: "unhealthy" });
  expect(logged.filter((l) => l.level === "error").map((l) => l.line)).toEqual([
    expect.stringMatching(/^Health check: unhealthy, COSMOS_CONNECTION: .*not an http\(s\) URL/),
  ]);
});

it("containers that do not exist: 503 unhealthy naming none of them; the log names each", async () => {
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  const { res, logged } = await probe();
  expect(res.status).toBe(503);
  expect(res.jsonBody).toEqual({ status: "unhealthy" });
  const errors = logged.filter((l) => l.level === "error").map((l) => l.line);
  expect(errors).toHaveLength(1);
  for (const role of ["resources", "summaries", "leases", "locks"]) {
    expect(errors[0]).toContain(`"${role}":"missing"`);
  }
  expect(errors[0]).toContain('"database":"cosmos-feed-app"');
});

it("every container answering: 200 healthy, and nothing logged", async () => {
  await ensureContainers(t.client);
  const { res, logged } = await probe();
  expect(res.status).toBe(200);
  expect(res.jsonBody).toEqual({ status: "healthy" });
  expect(logged).toEqual([]);
});
