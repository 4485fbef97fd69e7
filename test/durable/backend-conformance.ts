/**
 * The conformance suite of the task hub's storage interface (packages/devhost/src/durable/backend.ts): what every
 * backend promises the engine, tested through the interface alone — each verb group's races and outcomes, queries
 * and their paging, the pending-work scan, the dispatch feed's lease and checkpoints. A backend's run calls
 * `backendConformance` with how to open it (once for the suite); the tests write only their own instances (ids
 * unique per test), so a Cosmos DB run may share one container with other tests and runs, and no test judges a
 * duration (waits are for outcomes).
 */
import { afterAll, beforeAll, describe } from "vitest";
import type { TaskHubBackend } from "../../packages/devhost/src/durable/backend.js";
import { dispatchTests } from "./backend-conformance/dispatch.js";
import type { Suite } from "./backend-conformance/fixtures.js";
import { instanceTests } from "./backend-conformance/instances.js";
import { queryTests } from "./backend-conformance/queries.js";
import { workItemTests } from "./backend-conformance/work-items.js";

export interface OpenedBackend {
  backend: TaskHubBackend;
  close(): Promise<void>;
}

export function backendConformance(name: string, open: () => Promise<OpenedBackend>): void {
  describe(`task hub backend conformance: ${name}`, () => {
    let opened: OpenedBackend | undefined;
    beforeAll(async () => {
      opened = await open();
    });
    afterAll(async () => {
      await opened?.close();
    });
    const suite: Suite = {
      backend: () => {
        if (!opened) throw new Error("the backend is not open");
        return opened.backend;
      },
    };
    instanceTests(suite);
    workItemTests(suite);
    queryTests(suite);
    dispatchTests(suite);
  });
}
