/**
 * What the task hub acceptance tests (issue 20) share: a CosmosTaskHub on the emulator running REAL durable-functions
 * generators (the SDK's own Orchestrator wraps each, as in hub.test.ts) and plain activity functions, a wait for an
 * instance's status bounded by WAIT_MS, the history as the HTTP API shows it, and a gate the test holds (a promise it
 * opens) to stop an orchestrator or an activity at a chosen point without sleeping.
 */
import { createRequire } from "node:module";
import type { Container, Database } from "@azure/cosmos";
import type * as AzureFunctions from "@azure/functions";
import type { EntityContext, OrchestrationContext } from "durable-functions";
import { WAIT_MS } from "../../bench/lib/until.js";
import type { Clock } from "../../packages/core/src/clock.js";
import {
  CosmosTaskHub,
  type CosmosTaskHubOptions,
} from "../../packages/devhost/src/durable/cosmos-backend/task-hub.js";
import type { EntityInvoker } from "../../packages/devhost/src/durable/entity-engine.js";
import { entityHandler, runEntityHandler } from "../../packages/devhost/src/durable/testing-entities.js";
import type {
  ActivityWorkItem,
  InstanceStatus,
  OrchestrationTriggerInput,
} from "../../packages/devhost/src/durable/types.js";
import { uniqueName } from "../support/emulator.js";
import { FAST_INTERVALS, processorContainers } from "../support/processor-containers.js";

export { type StoredEntity, waitForEntityState, waitForStatus } from "../support/hub-waits.js";

export type Gen = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;

// By require: @azure/functions is CommonJS whose exports plain Node ESM cannot name (the kill test's child runs
// this file outside vitest).
const require = createRequire(import.meta.url);
const { InvocationContext } = require("@azure/functions") as typeof AzureFunctions;
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (
    f: Gen,
  ) => (trigger: unknown, ctx: AzureFunctions.InvocationContext) => Promise<unknown>;
};

/**
 * The hub's entity invoker for REAL durable-functions entity functions (the SDK's own Entity wraps each), the
 * trigger and the reply through JSON as between the host and the worker; `ran` collects `key:op:input` in order.
 */
export function entityInvoker(
  entities: Record<string, (ctx: EntityContext<unknown>) => unknown>,
  ran: string[] = [],
): EntityInvoker {
  const handlers = new Map(Object.entries(entities).map(([n, f]) => [n, entityHandler(f)]));
  return async (name, input) => {
    const h = handlers.get(name);
    if (!h) return { thrown: new Error(`no entity ${name}`) };
    const op = input.batch[0];
    ran.push(`${input.self.key}:${op?.name}:${op?.input ?? ""}`);
    return runEntityHandler(h, name, input);
  };
}

/**
 * The options of the reworked hub (design of issue 20; DURABLE_HUB_SETTINGS keys). Older builds ignore the ones they
 * do not know, so the tests typecheck and run against both.
 */
export type HubOptions = CosmosTaskHubOptions & {
  clock?: Clock;
  maxConcurrentOrchestrations?: number;
  maxPayloadBytes?: number;
  maxWorkItemAttempts?: number;
  activityLockMs?: number;
  waitPollMs?: number;
};

export type ActivityFn = (input: unknown, item: ActivityWorkItem) => unknown;

export interface HubSpec {
  container: Container;
  leaseContainer: Container;
  hubName?: string;
  instanceName?: string;
  orchestrators: Record<string, Gen>;
  activities: Record<string, ActivityFn>;
  /** Runs before each orchestrator invocation: may wait (a gate the test holds) or throw (a broken invoker). */
  beforeInvoke?: (name: string, input: OrchestrationTriggerInput) => Promise<void> | void;
  /** More options (the new knobs, a clock, lease timing). */
  options?: Partial<HubOptions>;
  /** Collects the hub's log lines (printed by a failing test's message). */
  log?: string[];
}

/** A hub with short feed, lease and wait intervals; not started. */
export function createHub(spec: HubSpec): CosmosTaskHub {
  const handlers = new Map(Object.entries(spec.orchestrators).map(([n, g]) => [n, createOrchestrator(g)]));
  let invocations = 0;
  const options: HubOptions = {
    container: spec.container,
    leaseContainer: spec.leaseContainer,
    hubName: spec.hubName ?? "AcceptHub",
    ...(spec.instanceName ? { instanceName: spec.instanceName } : {}),
    feedPollDelayMs: FAST_INTERVALS.feedPollDelay,
    leaseAcquireIntervalMs: FAST_INTERVALS.leaseAcquireInterval,
    leaseRenewIntervalMs: FAST_INTERVALS.leaseRenewInterval,
    leaseExpirationIntervalMs: FAST_INTERVALS.leaseExpirationInterval,
    timerScanIntervalMs: 200,
    waitPollMs: 200,
    log: (level, message) => spec.log?.push(`${level}: ${message}`),
    invokeOrchestrator: async (name, input) => {
      await spec.beforeInvoke?.(name, input);
      const h = handlers.get(name);
      if (!h) return { thrown: new Error(`The function '${name}' doesn't exist.`) };
      invocations++;
      const ctx = new InvocationContext({ functionName: name, invocationId: String(invocations) });
      try {
        return { returned: JSON.parse(JSON.stringify(await h(input, ctx))) };
      } catch (e) {
        return { thrown: e };
      }
    },
    invokeActivity: async (item) => {
      const fn = spec.activities[item.name];
      try {
        if (!fn) throw new Error(`no activity ${item.name}`);
        const value = await fn(item.input === null ? undefined : JSON.parse(item.input), item);
        return { result: JSON.stringify(value ?? null) };
      } catch (e) {
        return { failure: { ErrorType: "Error", ErrorMessage: (e as Error).message } };
      }
    },
    ...spec.options,
  };
  return new CosmosTaskHub(options);
}

/** A fresh task hub container (`/pk`, `ranges` physical ranges) and its lease container in `db`. */
export async function hubContainers(
  db: Database,
  ranges = 1,
): Promise<{ container: Container; leaseContainer: Container }> {
  const { monitored, leases } = await processorContainers(db, ranges);
  return { container: monitored, leaseContainer: leases };
}

/**
 * A task hub container without provisioned throughput (one range; the emulator never throttles it, as the dev
 * host's own containers) and its lease container: for tests about crashes, not request rates.
 */
export async function unthrottledHubContainers(
  db: Database,
): Promise<{ container: Container; leaseContainer: Container }> {
  const { container } = await db.containers.create({
    id: uniqueName("hub"),
    partitionKey: { paths: ["/pk"], version: 2 },
  });
  const { container: leaseContainer } = await db.containers.create({
    id: uniqueName("hub-leases"),
    partitionKey: { paths: ["/id"] },
    defaultTtl: -1,
  });
  return { container, leaseContainer };
}

/** The dispatch leases' owners (`durable.<hub>.` leases of the processor: their hosts' instance names), sorted. */
export async function leaseOwners(leases: Container, hubName: string): Promise<string[]> {
  const { resources } = await leases.items
    .query<{ Owner?: string | null }>({
      query: "SELECT c.Owner FROM c WHERE STARTSWITH(c.id, @prefix) AND IS_DEFINED(c.LeaseToken)",
      parameters: [{ name: "@prefix", value: `durable.${hubName}.` }],
    })
    .fetchAll();
  return resources.map((l) => String(l.Owner ?? null)).sort();
}

export const isFinished = (s: InstanceStatus) =>
  ["Completed", "Failed", "Terminated"].includes(s.runtimeStatus);

/** A history event as the HTTP API shows it (showHistory, showHistoryOutput). */
export interface ShownEvent {
  EventType: string;
  EventId?: number;
  TaskScheduledId?: number;
  Name?: string;
  Input?: unknown;
  Result?: unknown;
  [field: string]: unknown;
}

export async function historyOf(hub: CosmosTaskHub, instanceId: string): Promise<ShownEvent[]> {
  const s = await hub.getStatus(instanceId, { showHistory: true, showHistoryOutput: true });
  return (s?.historyEvents ?? []) as ShownEvent[];
}

/** TaskScheduledIds that have more than one TaskCompleted/TaskFailed in `history`. */
export function duplicateCompletions(history: ShownEvent[]): number[] {
  const seen = new Map<number, number>();
  for (const e of history) {
    if ((e.EventType === "TaskCompleted" || e.EventType === "TaskFailed") && e.TaskScheduledId !== undefined)
      seen.set(e.TaskScheduledId, (seen.get(e.TaskScheduledId) ?? 0) + 1);
  }
  return [...seen].filter(([, n]) => n > 1).map(([id]) => id);
}

export const countOf = (history: ShownEvent[], type: string) =>
  history.filter((e) => e.EventType === type).length;

/** A point the test holds closed: `pass()` waits until `open()` (at once after it); `entered` counts passes. */
export class Gate {
  entered = 0;
  private opened = false;
  private readonly waiting: (() => void)[] = [];
  private readonly arrivals: (() => void)[] = [];

  async pass(): Promise<void> {
    this.entered++;
    for (const a of this.arrivals.splice(0)) a();
    if (this.opened) return;
    await new Promise<void>((r) => this.waiting.push(r));
  }

  /** Resolves once something has reached the gate (bounded by WAIT_MS). */
  async reached(what: string): Promise<void> {
    if (this.entered > 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((r) => this.arrivals.push(r)),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), WAIT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  open(): void {
    this.opened = true;
    for (const w of this.waiting.splice(0)) w();
  }

  get isOpen(): boolean {
    return this.opened;
  }
}

/** Stops hubs for afterAll: each stop is given WAIT_MS (a wedged hub must not hang the file), errors ignored. */
export async function stopAll(hubs: CosmosTaskHub[]): Promise<void> {
  await Promise.all(
    hubs.map((h) => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([
        h.stop().catch(() => undefined),
        new Promise<void>((r) => {
          timer = setTimeout(r, WAIT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
    }),
  );
}
