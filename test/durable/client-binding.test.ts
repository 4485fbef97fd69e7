import { InvocationContext } from "@azure/functions";
import * as df from "durable-functions";
import { afterEach, describe, expect, it } from "vitest";
import {
  durableClientInputData,
  ensureWebsiteHostname,
  reachableOrigin,
} from "../../packages/devhost/src/durable/client-binding.js";
import { createDurableRuntime } from "../../packages/devhost/src/durable/runtime.js";
import { underPrefix } from "../../packages/devhost/src/http/server.js";

/** What df.getClient(context) builds from the binding data, as a function's handler would call it. */
function clientFor(data: unknown): df.DurableClient {
  const input = df.input.durableClient();
  const context = new InvocationContext({ functionName: "starter", options: { extraInputs: [input] } });
  context.extraInputs.set(input, data);
  return df.getClient(context);
}

const savedHostname = process.env.WEBSITE_HOSTNAME;
afterEach(() => {
  if (savedHostname === undefined) delete process.env.WEBSITE_HOSTNAME;
  else process.env.WEBSITE_HOSTNAME = savedHostname;
});

describe("durableClient binding data", () => {
  it("has the extension's shape and links for a host at 127.0.0.1:7071 (no key locally)", () => {
    const data = durableClientInputData({ baseUrl: "http://127.0.0.1:7071", hubName: "MyHub" });
    const root = "http://127.0.0.1:7071/runtime/webhooks/durabletask";
    const q = "taskHub=MyHub&connection=Storage";
    expect(data).toEqual({
      taskHubName: "MyHub",
      connectionName: null,
      creationUrls: {
        createNewInstancePostUri: `${root}/orchestrators/{functionName}[/{instanceId}]?`,
        createAndWaitOnNewInstancePostUri: `${root}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&`,
      },
      managementUrls: {
        id: "INSTANCEID",
        statusQueryGetUri: `${root}/instances/INSTANCEID?${q}`,
        sendEventPostUri: `${root}/instances/INSTANCEID/raiseEvent/{eventName}?${q}`,
        terminatePostUri: `${root}/instances/INSTANCEID/terminate?reason={text}&${q}`,
        rewindPostUri: `${root}/instances/INSTANCEID/rewind?reason={text}&${q}`,
        purgeHistoryDeleteUri: `${root}/instances/INSTANCEID?${q}`,
        restartPostUri: `${root}/instances/INSTANCEID/restart?${q}`,
        suspendPostUri: `${root}/instances/INSTANCEID/suspend?reason={text}&${q}`,
        resumePostUri: `${root}/instances/INSTANCEID/resume?reason={text}&${q}`,
      },
      baseUrl: root,
      requiredQueryStringParameters: "",
      rpcBaseUrl: `${root}/`,
    });
  });

  it("follows the binding's taskHub and connectionName, and a key when one is given", () => {
    const data = durableClientInputData({
      baseUrl: "http://127.0.0.1:9000/",
      hubName: "MyHub",
      binding: { taskHub: "OtherHub", connectionName: "CosmosDurable" },
      requiredQueryStringParameters: "code=abc",
    });
    expect(data.taskHubName).toBe("OtherHub");
    expect(data.managementUrls.statusQueryGetUri).toBe(
      "http://127.0.0.1:9000/runtime/webhooks/durabletask/instances/INSTANCEID?taskHub=OtherHub&connection=CosmosDurable&code=abc",
    );
    // Creation links carry only the key, as GetInstanceCreationLinks.
    expect(data.creationUrls.createNewInstancePostUri).toBe(
      "http://127.0.0.1:9000/runtime/webhooks/durabletask/orchestrators/{functionName}[/{instanceId}]?code=abc",
    );
    // Blank binding options fall back to the host's.
    const blank = durableClientInputData({
      baseUrl: "http://127.0.0.1:9000",
      hubName: "MyHub",
      binding: { taskHub: " ", connectionName: 42 },
    });
    expect(blank.taskHubName).toBe("MyHub");
    expect(blank.managementUrls.terminatePostUri).toContain("taskHub=MyHub&connection=Storage");
  });

  it("links to the loopback address when the host listens on every interface", () => {
    expect(reachableOrigin("http://0.0.0.0:7100")).toBe("http://127.0.0.1:7100");
    expect(durableClientInputData({ baseUrl: "http://0.0.0.0:7100", hubName: "H1x" }).rpcBaseUrl).toBe(
      "http://127.0.0.1:7100/runtime/webhooks/durabletask/",
    );
  });

  it("getClient keeps the links on the dev host's port once WEBSITE_HOSTNAME names it (not only 7071)", () => {
    const data = durableClientInputData({ baseUrl: "http://127.0.0.1:7399", hubName: "MyHub" });

    // Without WEBSITE_HOSTNAME the SDK rewrites every link's origin to localhost:7071 — wrong on another port.
    delete process.env.WEBSITE_HOSTNAME;
    const rewritten = clientFor(data).createHttpManagementPayload("abc");
    expect(rewritten.statusQueryGetUri).toBe(
      "http://localhost:7071/runtime/webhooks/durabletask/instances/abc?taskHub=MyHub&connection=Storage",
    );

    expect(ensureWebsiteHostname(process.env, "http://127.0.0.1:7399")).toBe("127.0.0.1:7399");
    const client = clientFor(data);
    expect(client.taskHubName).toBe("MyHub");
    const payload = client.createHttpManagementPayload("abc");
    expect(payload.statusQueryGetUri).toBe(
      "http://127.0.0.1:7399/runtime/webhooks/durabletask/instances/abc?taskHub=MyHub&connection=Storage",
    );
    expect(payload.sendEventPostUri).toBe(
      "http://127.0.0.1:7399/runtime/webhooks/durabletask/instances/abc/raiseEvent/{eventName}?taskHub=MyHub&connection=Storage",
    );
    expect(payload.id).toBe("abc");
  });

  it("ensureWebsiteHostname keeps a user's value and replaces 0.0.0.0 (which getClient also rewrites)", () => {
    const env: NodeJS.ProcessEnv = { WEBSITE_HOSTNAME: "myapp.example:8080" };
    expect(ensureWebsiteHostname(env, "http://127.0.0.1:7071")).toBeUndefined();
    expect(env.WEBSITE_HOSTNAME).toBe("myapp.example:8080");
    const zeros: NodeJS.ProcessEnv = { WEBSITE_HOSTNAME: "0.0.0.0:7071" };
    expect(ensureWebsiteHostname(zeros, "http://0.0.0.0:7200")).toBe("127.0.0.1:7200");
    expect(zeros.WEBSITE_HOSTNAME).toBe("127.0.0.1:7200");
  });

  it("the dev host's durable runtime gives this binding data and mounts the HTTP API (404 until a hub runs)", async () => {
    const env: NodeJS.ProcessEnv = {};
    const runtime = createDurableRuntime({
      env,
      extensions: () => ({}),
      location: () => Promise.reject(new Error("no task hub in this test")),
    });
    runtime.listening("http://0.0.0.0:7300");
    expect(env.WEBSITE_HOSTNAME).toBe("127.0.0.1:7300");
    const binding = { type: "durableClient", direction: "in" as const, taskHub: "OtherHub" };
    const typed = await runtime.inputs.durableClient?.(binding, {});
    expect(JSON.parse(String(typed?.string))).toEqual(
      durableClientInputData({ baseUrl: "http://127.0.0.1:7300", hubName: "TestHubName", binding }),
    );
    const res = await runtime.routes.handle({
      method: "GET",
      url: new URL("http://127.0.0.1:7300/runtime/webhooks/durabletask/instances/abc"),
      headers: {},
      body: Buffer.alloc(0),
    });
    expect(res?.status).toBe(404);
    expect(JSON.parse(String(res?.body)).Message).toMatch(/task hub is not running/);
    // Its paths only: a neighbour of the prefix goes on to the app's routes.
    expect(underPrefix("/runtime/webhooks/durabletask/instances", runtime.routes.prefix)).toBe(true);
    expect(underPrefix("/runtime/webhooks/durabletaskx", runtime.routes.prefix)).toBe(false);
  });
});
