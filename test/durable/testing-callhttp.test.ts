/**
 * runOrchestration (the in-memory helper) with callHttp: the test supplies the built-in activity
 * `BuiltIn::HttpActivity` (it gets each request, returns `{statusCode, headers, content}`); a 202 + Location is
 * polled on the virtual clock with Retry-After between polls, as on the dev host.
 */
import type { OrchestrationContext } from "durable-functions";
import { describe, expect, it } from "vitest";
import { runOrchestration } from "../../packages/devhost/src/durable/testing.js";

describe("runOrchestration with callHttp", () => {
  it("polls a 202 on virtual time until the final response", async () => {
    const requests: { method: string; uri: string }[] = [];
    const run = await runOrchestration(
      function* (ctx: OrchestrationContext) {
        const res = (yield ctx.df.callHttp({ method: "POST", url: "https://example.test/jobs" })) as {
          statusCode: number;
          content: string;
        };
        return `${res.statusCode} ${res.content}`;
      },
      {
        name: "job",
        activities: {
          "BuiltIn::HttpActivity": (input) => {
            const r = input as { method: string; uri: string };
            requests.push({ method: r.method, uri: r.uri });
            return requests.length < 3
              ? {
                  statusCode: 202,
                  headers: { Location: "https://example.test/jobs/1", "Retry-After": "5" },
                  content: "",
                }
              : { statusCode: 200, headers: {}, content: "done" };
          },
        },
      },
    );
    expect(run.status).toBe("Completed");
    expect(run.output).toBe("200 done");
    expect(requests).toEqual([
      { method: "POST", uri: "https://example.test/jobs" },
      { method: "GET", uri: "https://example.test/jobs/1" },
      { method: "GET", uri: "https://example.test/jobs/1" },
    ]);
    expect(run.elapsedMs).toBe(10_000);
  });
});
