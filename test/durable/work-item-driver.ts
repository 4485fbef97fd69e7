/**
 * A small in-memory task hub for the replay engine's tests: it runs REAL durable-functions orchestrators through
 * `applyMessages` (one work item = the first 1..k pending messages of an instance), with the nondeterminism a real
 * hub has — messages delivered in a random order, work items of random sizes, activities run in a random order,
 * completions delivered twice — driven by a seeded generator, on a virtual clock. No storage: it is the engine that
 * is checked. Every call is checked for what the engine promises (at most one replay, no completion recorded twice).
 */
import { createRequire } from "node:module";
import { InvocationContext } from "@azure/functions";
import type { OrchestrationContext } from "durable-functions";
import { activityResultEvent, applyMessages } from "../../packages/devhost/src/durable/engine.js";
import { timerFiredKey, timerFiredMessage } from "../../packages/devhost/src/durable/protocol.js";
import {
  type ActivityWorkItem,
  type HistoryEvent,
  HistoryEventType,
  type InstanceMessage,
  type OrchestrationState,
  type OrchestratorInvoker,
} from "../../packages/devhost/src/durable/types.js";

export type Gen = (ctx: OrchestrationContext) => Generator<unknown, unknown, never>;

const require = createRequire(import.meta.url);
const { createOrchestrator } = require("durable-functions/lib/src/util/testingUtils.js") as {
  createOrchestrator: (f: Gen) => (trigger: unknown, ctx: InvocationContext) => Promise<unknown>;
};

export const START = Date.UTC(2026, 0, 1);

/** A seeded generator: the same seed gives the same deliveries (the project's mulberry32, test/support/prng.ts). */
export { seededRandom as seeded } from "../../bench/lib/prng.js";

/** Calls the SDK's own handler for each orchestrator, through JSON as the worker's reply travels; counts calls. */
export function invokerFor(orchestrators: Record<string, Gen>): OrchestratorInvoker & { calls: number } {
  const handlers = new Map(Object.entries(orchestrators).map(([n, f]) => [n, createOrchestrator(f)]));
  const invoke = (async (name, input) => {
    invoke.calls++;
    const handler = handlers.get(name);
    if (!handler) return { thrown: new Error(`no orchestrator '${name}'`) };
    try {
      return {
        returned: JSON.parse(
          JSON.stringify(await handler(input, new InvocationContext({ functionName: name }))),
        ),
      };
    } catch (e) {
      return { thrown: e };
    }
  }) as OrchestratorInvoker & { calls: number };
  invoke.calls = 0;
  return invoke;
}

export function startMessage(instanceId: string, name: string, input: unknown, at = START): InstanceMessage {
  return {
    key: `start-${instanceId}`,
    instanceId,
    event: { EventType: HistoryEventType.ExecutionStarted, EventId: -1, IsPlayed: false, Timestamp: iso(at) },
    start: {
      name,
      input: input === undefined ? null : JSON.stringify(input),
      executionId: `e-${instanceId}`,
    },
  };
}

export function eventMessage(instanceId: string, key: string, name: string, input: unknown, at = START) {
  return {
    key,
    instanceId,
    event: {
      EventType: HistoryEventType.EventRaised,
      EventId: -1,
      IsPlayed: false,
      Timestamp: iso(at),
      Name: name,
      Input: JSON.stringify(input),
    },
  } satisfies InstanceMessage;
}

const iso = (ms: number) => new Date(ms).toISOString();

const COMPLETIONS = new Set<number>([
  HistoryEventType.TaskCompleted,
  HistoryEventType.TaskFailed,
  HistoryEventType.SubOrchestrationInstanceCompleted,
  HistoryEventType.SubOrchestrationInstanceFailed,
  HistoryEventType.TimerFired,
]);

/** Ids resolved twice in one execution's history (the engine's "recorded once" promise: always empty). */
export function duplicateCompletions(history: HistoryEvent[]): number[] {
  const seen = new Set<number>();
  const twice: number[] = [];
  for (const e of history) {
    if (!COMPLETIONS.has(e.EventType)) continue;
    const id = Number(e.EventType === HistoryEventType.TimerFired ? e.TimerId : e.TaskScheduledId);
    if (seen.has(id)) twice.push(id);
    seen.add(id);
  }
  return twice;
}

export interface DriveOptions {
  orchestrators: Record<string, Gen>;
  /** Activities by name: the return value, or a throw (a failure). */
  activities: Record<string, (input: unknown) => unknown>;
  /** Messages per work item at most (each work item takes 1..maxBatch of the pending ones). */
  maxBatch: number;
  random: () => number;
  /** External events for the root instance, raised at a virtual time. */
  events?: { name: string; input: unknown; atMs: number }[];
  /**
   * Chance of running a work item when something else could happen (a delivery, an activity): low lets messages
   * pile up into large work items, high runs each message nearly alone. Default 0.5.
   */
  eagerness?: number;
  /** Chance that a delivery also delivers an earlier completion again (at-least-once delivery). */
  duplicateRate?: number;
  maxPayloadBytes?: number;
  maxSteps?: number;
}

export interface DriveResult {
  root: OrchestrationState | undefined;
  instances: Map<string, OrchestrationState>;
  workItems: number;
  invocations: number;
  /** Work items whose one replay took two messages or more. */
  batched: number;
  /** Problems seen on the way (a second replay in one call, a completion recorded twice). */
  violations: string[];
}

/** Runs `rootName` with `input` as instance "root" until nothing more can happen. */
export async function drive(rootName: string, input: unknown, o: DriveOptions): Promise<DriveResult> {
  const rnd = o.random;
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
  const invoke = invokerFor(o.orchestrators);
  const limits = { maxPayloadBytes: o.maxPayloadBytes ?? 262_144 };
  const instances = new Map<string, OrchestrationState>();
  const pending = new Map<string, InstanceMessage[]>();
  /** Instances whose pending messages cannot apply until another message arrives. */
  const blocked = new Set<string>();
  const inFlight: InstanceMessage[] = [];
  const delivered: InstanceMessage[] = [];
  const activities: ActivityWorkItem[] = [];
  let timers: { at: number; message: InstanceMessage }[] = [];
  const events = [...(o.events ?? [])].sort((a, b) => a.atMs - b.atMs);
  const violations: string[] = [];
  let clock = START;
  let workItems = 0;
  let batched = 0;

  inFlight.push(startMessage("root", rootName, input));
  const deliver = (m: InstanceMessage) => {
    const list = pending.get(m.instanceId) ?? [];
    list.push(m);
    pending.set(m.instanceId, list);
    blocked.delete(m.instanceId);
  };

  const runWorkItem = async (instanceId: string) => {
    const list = pending.get(instanceId) ?? [];
    let take = list.slice(0, 1 + Math.floor(rnd() * o.maxBatch));
    let r = await applyMessages(instances.get(instanceId), take, new Date(clock), invoke, limits);
    workItems++;
    if (r.consumed.length === 0 && take.length < list.length) {
      // The first messages wait (e.g. for a start further on): a dispatcher hands over all of them.
      take = list;
      r = await applyMessages(instances.get(instanceId), take, new Date(clock), invoke, limits);
      workItems++;
    }
    if (r.invocations === 1 && r.consumed.length - r.dropped.length >= 2) batched++;
    if (r.invocations > 1) violations.push(`${instanceId}: ${r.invocations} replays in one work item`);
    if (r.consumed.length === 0) {
      blocked.add(instanceId);
      return;
    }
    const left = [...list];
    for (const key of r.consumed) {
      const at = left.findIndex((m) => m.key === key);
      if (at < 0) violations.push(`${instanceId}: consumed ${key}, which it was not given`);
      else left.splice(at, 1);
    }
    pending.set(instanceId, left);
    if (r.state) {
      instances.set(instanceId, r.state);
      const twice = duplicateCompletions(r.state.history);
      if (twice.length > 0) violations.push(`${instanceId}: ids ${twice.join(", ")} completed twice`);
    }
    for (const w of r.work) {
      if (w.kind === "activity") activities.push(w.item);
      else if (w.kind === "message") inFlight.push(w.message);
      else if (w.kind === "cancelTimer") {
        const key = timerFiredKey(w.executionId, w.timerId);
        timers = timers.filter((t) => t.message.key !== key);
      } else {
        timers.push({ at: Date.parse(w.fireAt), message: timerFiredMessage(w, w.fireAt) });
      }
    }
  };

  const runActivity = (item: ActivityWorkItem) => {
    const impl = o.activities[item.name];
    let outcome: Parameters<typeof activityResultEvent>[1];
    try {
      if (!impl) throw new Error(`no activity '${item.name}'`);
      const value = impl(item.input === null ? undefined : JSON.parse(item.input));
      outcome = { result: JSON.stringify(value ?? null) };
    } catch (e) {
      const err = e as Error;
      outcome = { failure: { ErrorType: err.name, ErrorMessage: err.message, IsNonRetriable: false } };
    }
    inFlight.push({
      key: `task-${item.executionId}-${item.taskScheduledId}`,
      instanceId: item.instanceId,
      executionId: item.executionId,
      event: activityResultEvent(item, outcome, new Date(clock), limits.maxPayloadBytes),
    });
  };

  for (let step = 0; step < (o.maxSteps ?? 20_000); step++) {
    const ready = [...pending.entries()]
      .filter(([id, l]) => l.length > 0 && !blocked.has(id))
      .map(([id]) => id);
    const choices: string[] = [];
    if (inFlight.length > 0) choices.push("deliver");
    if (activities.length > 0) choices.push("activity");
    if (ready.length > 0 && (choices.length === 0 || rnd() < (o.eagerness ?? 0.5)))
      choices.splice(0, 2, "workItem");
    if (choices.length === 0) {
      // Quiet: the clock moves to the next timer or event.
      const next = Math.min(
        timers[0] ? Math.min(...timers.map((t) => t.at)) : Infinity,
        events[0]?.atMs ?? Infinity,
      );
      if (next === Infinity) break;
      clock = Math.max(clock, next);
      for (const t of timers.filter((t) => t.at <= clock)) inFlight.push(t.message);
      timers = timers.filter((t) => t.at > clock);
      while (events[0] && events[0].atMs <= clock) {
        const ev = events.shift() as (typeof events)[number];
        inFlight.push(eventMessage("root", `event-${ev.name}`, ev.name, ev.input, clock));
      }
      continue;
    }
    const choice = pick(choices);
    if (choice === "workItem") await runWorkItem(pick(ready));
    else if (choice === "activity")
      runActivity(activities.splice(Math.floor(rnd() * activities.length), 1)[0]);
    else {
      const m = inFlight.splice(Math.floor(rnd() * inFlight.length), 1)[0];
      deliver(m);
      if (COMPLETIONS.has(m.event.EventType)) delivered.push(m);
      if (delivered.length > 0 && rnd() < (o.duplicateRate ?? 0)) deliver(structuredClone(pick(delivered)));
    }
  }
  return {
    root: instances.get("root"),
    instances,
    workItems,
    invocations: invoke.calls,
    batched,
    violations,
  };
}
