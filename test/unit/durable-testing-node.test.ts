/**
 * The orchestrator test helper (packages/devhost/src/durable/testing.ts) outside vitest: docs/durable-testing.md's example,
 * run as a plain script in a real child process (`node --import tsx`), must complete as it does in a test.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EXAMPLE_TEST_TIMEOUT_MS, runExampleScript } from "../support/run-example.js";

const script = fileURLToPath(new URL("../fixtures/durable-testing/example.ts", import.meta.url));

describe("runOrchestration outside vitest", () => {
  it(
    "docs/durable-testing.md's example runs under plain node (tsx) and completes",
    async () => {
      expect(await runExampleScript(script)).toEqual({
        status: "Completed",
        output: { outcome: "Succeeded" },
        elapsedMs: 3_000,
      });
    },
    EXAMPLE_TEST_TIMEOUT_MS,
  );
});
