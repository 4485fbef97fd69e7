/**
 * The orchestrator test helper (packages/devhost/src/durable/testing.ts) outside vitest: docs/durable-testing.md's example,
 * run as a plain script in a real child process (`node --import tsx`), must complete as it does in a test.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";

const script = fileURLToPath(new URL("../fixtures/durable-testing/example.ts", import.meta.url));

describe("runOrchestration outside vitest", () => {
  it(
    "docs/durable-testing.md's example runs under plain node (tsx) and completes",
    async () => {
      const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", script], {
        timeout: WAIT_MS * 4,
        env: { ...process.env, NODE_OPTIONS: "--conditions=source" },
      });
      const last = stdout.trim().split("\n").pop() ?? "";
      expect(JSON.parse(last)).toEqual({
        status: "Completed",
        output: { outcome: "Succeeded" },
        elapsedMs: 3_000,
      });
    },
    WAIT_MS * 5,
  );
});
