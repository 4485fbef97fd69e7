/**
 * The task hub the durable HTTP API tests run on: a REAL TaskHub over a MemoryBackend running REAL durable-functions
 * generators (the SDK's own Orchestrator wraps each, as in hub.test.ts) and the counter entity. The test moves an
 * orchestration only through the public API — `hello` waits for the event "finish" (completes with its data) or
 * "fail" (throws its data as the error); `other` completes at once with its input; suspend, resume and terminate
 * are the hub's own — and may hold an instance's episodes (a gate) to see it Pending. Durable time is a FakeClock
 * the test moves; the hub's waits are real, re-reading every `waitPollMs`.
 */
import { createRequire } from "node:module";
import { InvocationContext } from "@azure/functions";
import { FakeClock } from "@cosmos-feed/core/testing";
import type { OrchestrationContext } from "durable-functions";
import type { TaskHubBackend } from "../../packages/devhost/src/durable/backend.js";
import { TaskHub, type TaskHubOptions } from "../../packages/devhost/src/durable/hub.js";
import { MemoryBackend } from "../../packages/devhost/src/durable/memory-backend/index.js";
import { entityHandler, runEntityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import type { InstanceFilter, InstanceStatus } from "../../packages/devhost/src/durable/types.js";
import { waitForStatus } from "../support/hub-waits.js";
import { counterOperation } from "./counter-entity.js";

type Gen = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Gen) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

const orchestrators: Record<string, Gen> = {
  hello: function* (ctx) {
    const finish = ctx.df.waitForExternalEvent("finish");
    const fail = ctx.df.waitForExternalEvent("fail");
    const winner = yield ctx.df.Task.any([finish, fail]);
    if (winner === fail) throw new Error(String(fail.result));
    return finish.result;
  },
  other: function* (ctx) {
    yield* [];
    return ctx.df.getInput();
  },
};
/** The orchestrators the app has (the HTTP API's isOrchestrator). */
export const ORCHESTRATORS = new Set(Object.keys(orchestrators));

const counter = entityHandler((context) => {
  counterOperation(context);
});

/** The gate key that holds every instance. */
const ALL = "*";

/** Where durable time starts: not a whole second, so the API's whole-second times show. */
export const START_MS = Date.UTC(2026, 0, 1) + 456;

export interface ApiHub {
  hub: TaskHub;
  backend: TaskHubBackend;
  /** Durable time (createdTime, lastUpdatedTime, event timestamps). */
  clock: FakeClock;
  /** Holds the instance's episodes (every instance's, without an id) until release: it stays Pending. */
  hold(instanceId?: string): void;
  release(instanceId?: string): void;
  /** Reads the instance until `done` holds; throws after WAIT_MS with the last status seen. */
  until(instanceId: string, done: (s: InstanceStatus) => boolean): Promise<InstanceStatus>;
  /** The hub's orchestration instance ids (every page), in the backend's order. */
  ids(filter?: InstanceFilter): Promise<string[]>;
  close(): Promise<void>;
}

export const isStatus =
  (...statuses: string[]) =>
  (s: InstanceStatus) =>
    statuses.includes(s.runtimeStatus);
export const isFinished = isStatus("Completed", "Failed", "Terminated");

/** A started hub on `backend` (a fresh MemoryBackend by default) with a fast wait poll. */
export async function startApiHub(
  hubName: string,
  options: { backend?: TaskHubBackend; start?: boolean } & Partial<TaskHubOptions> = {},
): Promise<ApiHub> {
  const { backend: given, start = true, ...rest } = options;
  const clock = new FakeClock(START_MS);
  const backend = given ?? new MemoryBackend({ hubName, clock });
  const gates = new Map<string, { open: Promise<void>; release: () => void }>();
  const handlers = new Map(Object.entries(orchestrators).map(([n, g]) => [n, createOrchestrator(g)]));
  let invocations = 0;
  const hub = new TaskHub({
    backend,
    hubName,
    clock,
    feedPollDelayMs: 50,
    timerScanIntervalMs: 200,
    waitPollMs: 50,
    stopWorkItemsMs: 200,
    invokeOrchestrator: async (name, input) => {
      await (gates.get(input.instanceId) ?? gates.get(ALL))?.open;
      const h = handlers.get(name);
      if (!h) return { thrown: new Error(`The function '${name}' doesn't exist.`) };
      const ctx = new InvocationContext({ functionName: name, invocationId: String(++invocations) });
      try {
        return { returned: JSON.parse(JSON.stringify(await h(input, ctx))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity: async () => ({ failure: { ErrorType: "Error", ErrorMessage: "no activities here" } }),
    invokeEntity: async (name, input) =>
      name === "counter"
        ? runEntityHandler(counter, name, input)
        : { thrown: new Error(`no entity ${name}`) },
    ...rest,
  });
  if (start) await hub.start();
  const release = (instanceId = ALL) => {
    gates.get(instanceId)?.release();
    gates.delete(instanceId);
  };
  return {
    hub,
    backend,
    clock,
    hold: (instanceId = ALL) => {
      let open = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      gates.set(instanceId, { open: gate, release: open });
    },
    release,
    until: (instanceId, done) => waitForStatus(hub, instanceId, done),
    ids: async (filter = {}) => {
      const out: string[] = [];
      let continuationToken: string | undefined;
      do {
        const page = await hub.list({ ...filter, ...(continuationToken ? { continuationToken } : {}) });
        out.push(...page.instances.map((s) => s.instanceId));
        continuationToken = page.continuationToken;
      } while (continuationToken);
      return out;
    },
    close: async () => {
      for (const id of [...gates.keys()]) release(id);
      await hub.stop();
    },
  };
}

type FaultyVerb = "readInstance" | "queryInstances" | "createInstance";

/**
 * FAULT INJECTION, not a fake engine: the memory backend, but each verb named in `faults` throws the error given for
 * it (a store that is down, throttled, or refuses a continuation token), so the HTTP API's answer to the task hub's
 * failures is tested through the real TaskHub.
 */
export class FaultyBackend extends MemoryBackend {
  constructor(
    hubName: string,
    private readonly faults: Partial<Record<FaultyVerb, unknown>>,
  ) {
    super({ hubName });
  }

  private fault(verb: FaultyVerb): void {
    if (verb in this.faults) throw this.faults[verb];
  }

  override async readInstance(instanceId: string) {
    this.fault("readInstance");
    return super.readInstance(instanceId);
  }

  override async queryInstances(filter: InstanceFilter) {
    this.fault("queryInstances");
    return super.queryInstances(filter);
  }

  override async createInstance(doc: Parameters<MemoryBackend["createInstance"]>[0]) {
    this.fault("createInstance");
    return super.createInstance(doc);
  }
}

/** A client-only TaskHub (not started: nothing runs, the client operations go to the store) over a FaultyBackend. */
export function hubOverFaultyStore(hubName: string, faults: Partial<Record<FaultyVerb, unknown>>): TaskHub {
  return new TaskHub({
    backend: new FaultyBackend(hubName, faults),
    hubName,
    invokeOrchestrator: async () => ({ thrown: new Error("nothing runs on a client-only hub") }),
    invokeActivity: async () => ({ failure: { ErrorType: "Error", ErrorMessage: "nothing runs here" } }),
  });
}
