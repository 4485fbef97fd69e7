/**
 * A start made through a running hub is created with its first episode (dispatcher startHere,
 * docs/durable-design.md "Orchestration work items"): no write before the episode's commit, which creates the
 * instance; past DURABLE_START_EPISODE_WAIT_MS the start is written alone and the held episode commits on it, not
 * replayed again; 0 always writes the start alone. A real TaskHub over a MemoryBackend that counts its writes, real
 * durable-functions generators (api-hub.ts); counts, no clocks judged.
 */
import { afterEach, describe, expect, it } from "vitest";
import type {
  CommitOutcome,
  CreateOutcome,
  WorkItemCommit,
} from "../../packages/devhost/src/durable/backend.js";
import type { InstanceDoc } from "../../packages/devhost/src/durable/documents.js";
import { MemoryBackend } from "../../packages/devhost/src/durable/memory-backend/index.js";
import { type ApiHub, isFinished, startApiHub } from "./api-hub.js";

/** A memory backend that counts the start's writes and the work items' commits. */
class CountingBackend extends MemoryBackend {
  creates = 0;
  commits = 0;
  override createInstance(doc: InstanceDoc): Promise<CreateOutcome> {
    this.creates++;
    return super.createInstance(doc);
  }
  override completeOrchestrationWorkItem(commit: WorkItemCommit): Promise<CommitOutcome> {
    this.commits++;
    return super.completeOrchestrationWorkItem(commit);
  }
}

const HUB = "StartEpisodeHub";
let ah: ApiHub | undefined;

afterEach(async () => {
  await ah?.close();
  ah = undefined;
});

describe("a start made through a running hub", () => {
  it("is created with its first episode: one commit, nothing written before it, the instance past Pending when startNew returns", async () => {
    const backend = new CountingBackend({ hubName: HUB });
    // A wait no episode here outlasts, however loaded the machine: the outcome is not left to timing.
    ah = await startApiHub(HUB, { backend, startEpisodeWaitMs: 60_000 });
    await ah.hub.startNew("hello", { instanceId: "waits" });
    // The first episode ran before anything was stored: the instance waits for its event.
    expect((await ah.hub.getStatus("waits"))?.runtimeStatus).toBe("Running");
    await ah.hub.startNew("other", { instanceId: "done", input: JSON.stringify("x") });
    expect(await ah.hub.getStatus("done")).toMatchObject({ runtimeStatus: "Completed", output: "x" });
    expect({ creates: backend.creates, commits: backend.commits }).toEqual({ creates: 0, commits: 2 });
    expect(ah.hub.dispatcher.counters.replays).toBe(2);

    await ah.hub.raiseEvent("waits", "finish", JSON.stringify("y"));
    expect(await ah.until("waits", isFinished)).toMatchObject({ runtimeStatus: "Completed", output: "y" });
    // An id that exists is refused as before (the create lost: the start goes the plain way).
    await expect(ah.hub.startNew("hello", { instanceId: "waits" })).resolves.toEqual({ instanceId: "waits" });
    expect(await ah.until("waits", (s) => s.runtimeStatus === "Running")).toMatchObject({ output: null });
  });

  it("writes the start alone when its episode does not end within the wait; the held episode then commits on it, replayed once", async () => {
    const backend = new CountingBackend({ hubName: HUB });
    ah = await startApiHub(HUB, { backend, startEpisodeWaitMs: 20 });
    ah.hold("held");
    await ah.hub.startNew("other", { instanceId: "held", input: JSON.stringify("z") });
    expect((await ah.hub.getStatus("held"))?.runtimeStatus).toBe("Pending");
    expect(backend.creates).toBe(1);
    ah.release("held");
    expect(await ah.until("held", isFinished)).toMatchObject({ runtimeStatus: "Completed", output: "z" });
    expect(ah.hub.dispatcher.counters.replays).toBe(1);
    expect(backend.commits).toBe(1);
  });

  it("writes the start alone with DURABLE_START_EPISODE_WAIT_MS 0", async () => {
    const backend = new CountingBackend({ hubName: HUB });
    ah = await startApiHub(HUB, { backend, startEpisodeWaitMs: 0 });
    await ah.hub.startNew("other", { instanceId: "alone", input: JSON.stringify(1) });
    expect(await ah.until("alone", isFinished)).toMatchObject({ runtimeStatus: "Completed", output: 1 });
    expect({ creates: backend.creates, commits: backend.commits }).toEqual({ creates: 1, commits: 1 });
  });
});
