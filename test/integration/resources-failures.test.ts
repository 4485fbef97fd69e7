import { HttpRequest, InvocationContext, type LogLevel } from "@azure/functions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiRequest, getResource, listResources, putResource } from "../../functions/resources.js";
import { containerDefinition, ensureContainers } from "../../src/shared/containers.js";
import { createAppContext, ResourceApi } from "../../src/shared/resources/index.js";
import { loadSettings } from "../../src/shared/settings.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { faultPlugins } from "../support/faults.js";

// What the API does when the database fails or the request is given up: every 500 leaves one error line in the
// invocation's log (the InvocationContext, as the Functions host and the dev host both show it) naming the
// invocation and, when known, the operation; an aborted request is a 503 logged as a warning, never a 500.

let t: TestEmulator;
const BASE = "http://localhost:7071/api";

beforeAll(async () => {
  t = await startTestEmulator();
  // The app's database is not created until the second block: the handlers' first calls find nothing.
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

interface Line {
  level: LogLevel;
  text: string;
}

/** A real InvocationContext (the library's test mode) whose log lines are kept. */
function invocation(invocationId: string): { context: InvocationContext; lines: Line[] } {
  const lines: Line[] = [];
  const context = new InvocationContext({
    invocationId,
    functionName: "test",
    logHandler: (level, ...args) => lines.push({ level, text: args.map(String).join(" ") }),
  });
  return { context, lines };
}

const errors = (lines: Line[]) => lines.filter((l) => l.level === "error");

function request(method: string, path: string, params: Record<string, string>, body?: string) {
  return new HttpRequest({
    method,
    url: `${BASE}${path}`,
    params,
    ...(body === undefined ? {} : { body: { string: body } }),
  });
}

describe("through the handlers, with the app's database missing", () => {
  it("a context that cannot open (a bad app setting) is a logged 500, not an unhandled throw (first: the context is opened once)", async () => {
    process.env.LIST_PAGE_SIZE = "0";
    try {
      const { context, lines } = invocation("inv-settings-0002");
      const res = await getResource(
        request("GET", "/subscriptions/sub-a/resources/x", { subscriptionId: "sub-a", resourceName: "x" }),
        context,
      );
      expect(res.status).toBe(500);
      expect((res.jsonBody as { error: { code: string } }).error.code).toBe("InvalidSettings");
      expect(errors(lines)).toHaveLength(1);
      expect(errors(lines)[0].text).toMatch(/inv-settings-0002[\s\S]*LIST_PAGE_SIZE/);
    } finally {
      delete process.env.LIST_PAGE_SIZE;
    }
  });

  it("a list whose query fails answers 500 and logs one error line naming the invocation", async () => {
    const { context, lines } = invocation("inv-list-0001");
    const res = await listResources(
      request("GET", "/subscriptions/sub-a/resources", { subscriptionId: "sub-a" }),
      context,
    );
    expect(res.status).toBe(500);
    expect((res.jsonBody as { error: { code: string } }).error.code).toBe("InternalServerError");
    expect(errors(lines)).toHaveLength(1);
    expect(errors(lines)[0].text).toContain("inv-list-0001");
    expect(errors(lines)[0].text).toContain("/api/subscriptions/sub-a/resources");
  });

  it("a client error is answered without an error line", async () => {
    const { context, lines } = invocation("inv-bad-0003");
    const res = await putResource(
      request("PUT", "/subscriptions/sub-a/resources/x", { subscriptionId: "sub-a", resourceName: "x" }, "{"),
      context,
    );
    expect(res.status).toBe(400);
    expect(lines).toEqual([]);
  });
});

describe("failures and aborts inside the SDK", () => {
  /** Requests for documents are held while `hold` is set, until it resolves; others pass. */
  let hold: Promise<void> | undefined;
  let failWith: Error | undefined;
  let api: ResourceApi;
  let docsRequests = 0;

  beforeAll(async () => {
    await ensureContainers(t.client);
    const client = t.newClient(
      faultPlugins({
        match: (c) => c.resourceType === "docs",
        run: async (_c, next) => {
          docsRequests++;
          if (failWith) throw failWith;
          if (hold) await hold;
          return next();
        },
      }),
    );
    api = new ResourceApi(createAppContext(client, loadSettings({})));
  });

  /** Sends `call` with a signal aborted while its first document request is held; returns answer and log. */
  async function abortedWhileHeld(
    call: (req: ReturnType<typeof apiRequest>) => Promise<{ status: number; body?: unknown }>,
    req: HttpRequest,
  ) {
    const controller = new AbortController();
    const { context, lines } = invocation("inv-abort-0004");
    let release = () => {};
    hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen = docsRequests;
    const pending = call(apiRequest(req, context, controller.signal));
    try {
      while (docsRequests === seen) await new Promise((r) => setImmediate(r));
      controller.abort(new Error("test: the caller went away"));
      release();
      return { res: await pending, lines };
    } finally {
      hold = undefined;
    }
  }

  it.each([
    ["get", (r: ReturnType<typeof apiRequest>) => api.get(r), "/subscriptions/sub-b/resources/x"],
    ["list", (r: ReturnType<typeof apiRequest>) => api.list(r), "/subscriptions/sub-b/resources"],
    [
      "getOperation",
      (r: ReturnType<typeof apiRequest>) => api.getOperation(r),
      "/operations/00000000-0000-4000-8000-000000000000",
    ],
  ])("an aborted %s stops in the SDK and answers 503 RequestAborted, logged as a warning, not an error", async (_n, call, path) => {
    const params = {
      subscriptionId: "sub-b",
      resourceName: "x",
      operationId: "00000000-0000-4000-8000-000000000000",
    };
    const { res, lines } = await abortedWhileHeld(call, request("GET", path, params));
    expect(res.status).toBe(503);
    expect((res.body as { error: { code: string } }).error.code).toBe("RequestAborted");
    expect(errors(lines)).toEqual([]);
    expect(lines.filter((l) => l.level === "warning")).toHaveLength(1);
    expect(lines[0].text).toMatch(/inv-abort-0004[\s\S]*the caller went away/);
  });

  it("an aborted PUT writes nothing", async () => {
    const controller = new AbortController();
    controller.abort(new Error("test: gone before it started"));
    const { context, lines } = invocation("inv-abort-0005");
    const res = await api.put(
      apiRequest(
        request(
          "PUT",
          "/subscriptions/sub-c/resources/x",
          { subscriptionId: "sub-c", resourceName: "x" },
          JSON.stringify({ properties: { sku: "basic" } }),
        ),
        context,
        controller.signal,
      ),
    );
    expect(res.status).toBe(503);
    expect(errors(lines)).toEqual([]);
    // Nothing of sub-c in any container of the app's database, whatever the layout.
    const database = t.client.database(containerDefinition.database.name);
    for (const c of containerDefinition.containers) {
      const { resources } = await database
        .container(c.name)
        .items.query("SELECT c.id FROM c WHERE c.subscriptionId = 'sub-c'")
        .fetchAll();
      expect({ container: c.name, resources }).toEqual({ container: c.name, resources: [] });
    }
  });

  it("a failed read of an operation logs one error line naming the invocation and the operation", async () => {
    const { context, lines } = invocation("inv-op-0006");
    const id = "0b7d0f4e-7a43-4c4e-9c39-2d8c1f0e6a51";
    failWith = new Error("injected: connection reset");
    try {
      const res = await api.getOperation(
        apiRequest(
          request("GET", `/operations/${id}`, { subscriptionId: "sub-b", operationId: id }),
          context,
          new AbortController().signal,
        ),
      );
      expect(res.status).toBe(500);
    } finally {
      failWith = undefined;
    }
    expect(errors(lines)).toHaveLength(1);
    expect(errors(lines)[0].text).toMatch(
      new RegExp(`invocation inv-op-0006, operation ${id}[\\s\\S]*injected: connection reset`),
    );
  });
});
