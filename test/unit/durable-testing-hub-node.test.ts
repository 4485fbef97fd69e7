/**
 * The test hub (packages/devhost/src/durable/testing-hub.ts) outside vitest: docs/durable-testing.md's startTestHub
 * example is test/fixtures/durable-testing/hub-example.ts word for word (below the fixture's header comment), and that
 * file, run as a plain script in a real child process (`node --import tsx`), completes as the doc says.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readDoc } from "../support/markdown.js";
import { EXAMPLE_TEST_TIMEOUT_MS, runExampleScript } from "../support/run-example.js";

const script = fileURLToPath(new URL("../fixtures/durable-testing/hub-example.ts", import.meta.url));

/** The first ```ts block after the heading that starts with `heading`. */
function codeBlockAfter(markdown: string, heading: string): string {
  const at = markdown.indexOf(`\n## ${heading}`);
  expect(at, `a heading "## ${heading}…"`).toBeGreaterThanOrEqual(0);
  const block = /```ts\n([\s\S]*?)```/.exec(markdown.slice(at));
  expect(block, `a ts block after "## ${heading}"`).not.toBeNull();
  return block?.[1] ?? "";
}

describe("startTestHub outside vitest", () => {
  it("docs/durable-testing.md's example is the fixture's code, word for word", () => {
    const fixture = readFileSync(script, "utf8").replace(/^(\/\/.*\n)+/, "");
    // The fixture sits in test/fixtures/durable-testing/: its import of the app goes up one folder more.
    const asInDoc = fixture.replace('"../../../functions/', '"../functions/');
    expect(codeBlockAfter(readDoc("docs/durable-testing.md"), "`startTestHub")).toBe(asInDoc);
  });

  it(
    "runs under plain node (tsx): the retries' timers fire on the fake clock and it completes",
    async () => {
      expect(await runExampleScript(script)).toEqual({
        status: "Completed",
        output: { outcome: "Succeeded" },
        virtualMs: 3_000,
        provisionCalls: 3,
      });
    },
    EXAMPLE_TEST_TIMEOUT_MS,
  );
});
