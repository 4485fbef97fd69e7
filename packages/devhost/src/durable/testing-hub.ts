import { FakeClock } from "@cosmos-feed/core/testing";
import { entitySchedulerId } from "./entity-batch.js";
import { TaskHub } from "./hub.js";
import { MemoryBackend } from "./memory-backend/index.js";
import { DURABLE_HUB_SETTINGS } from "./settings.js";
import type { EntityOperationRun } from "./testing-entities.js";
import {
  type ActivityInvocation,
  TestHubError,
  type TestHubFunctions,
  testHubInvokers,
} from "./testing-hub-functions.js";
import { ACTIVITY_LOCK_MS, TEST_HUB_TIMINGS, type TestHubOptions } from "./testing-hub-options.js";
import type { InstanceStatus } from "./types.js";

export type { LogLevel } from "./hub.js";
export type { Orchestrator, OrchestratorFunction, RegisteredOrchestrationHandler } from "./testing.js";
export type { EntityImplementation, EntityOperationRun } from "./testing-entities.js";
export {
  type ActivityHandler,
  type ActivityInvocation,
  type ActivityRegistration,
  TestHubError,
  type TestHubErrorCode,
  type TestHubFunctions,
} from "./testing-hub-functions.js";
export { TEST_HUB_TIMINGS, type TestHubOptions } from "./testing-hub-options.js";
export type { InstanceStatus, RuntimeStatus } from "./types.js";

/**
 * Test orchestrations, activities and entities together on the dev host's REAL task hub (hub.ts: dispatcher, activity
 * worker, timers, entity engine, client operations) over the in-memory backend (memory-backend/) — no emulator, no
 * host — with durable time on a `FakeClock` the test moves. Waits follow the hub's own change notifications
 * (`waitForChange`), not sleeps. Docs: docs/durable-testing.md.
 */

const FINISHED = new Set(["Completed", "Failed", "Terminated"]);

/**
 * A started task hub over memory with the test's functions (from {@link startTestHub}): a small client — start, wait,
 * raise events, terminate, signal and read entities — and the fake clock its durable timers run on.
 */
export class TestHub {
  /** Durable time: timers, retry delays, `currentUtcDateTime`. Stands still until the test moves it. */
  readonly clock: FakeClock;
  /**
   * The real task hub (purge, list … through its `TaskHubClient` methods).
   * @internal Its type is `./durable`'s `TaskHub`: stripped from this entry point's .d.ts (`stripInternal`), so that
   * the test helper's API is its own client's.
   */
  readonly hub: TaskHub;
  /** What the functions ran, as the invokers record it. */
  private readonly record = {
    activityCalls: [] as ActivityInvocation[],
    entityOperations: [] as EntityOperationRun[],
  };
  private readonly functions: TestHubFunctions;
  private readonly waitTimeoutMs: number;
  private readonly pollMs: number;

  /** A hub not started yet (a client only: nothing runs); {@link startTestHub} makes and starts one. */
  constructor(options: TestHubOptions) {
    this.functions = options;
    this.clock = new FakeClock((options.startTime ?? new Date(Date.UTC(2026, 0, 1))).getTime());
    this.waitTimeoutMs = options.waitTimeoutMs ?? TEST_HUB_TIMINGS.waitTimeoutMs.default;
    this.pollMs = options.pollMs ?? TEST_HUB_TIMINGS.pollMs.default;
    const hubName = options.hubName ?? "TestHub";
    const invokers = testHubInvokers(
      options,
      this.record,
      () => new Date(this.clock.now()).toISOString(),
      DURABLE_HUB_SETTINGS.maxPayloadBytes.default,
    );
    this.hub = new TaskHub({
      backend: new MemoryBackend({ hubName, clock: this.clock }),
      hubName,
      clock: this.clock,
      ...invokers,
      feedPollDelayMs: this.pollMs,
      waitPollMs: this.pollMs,
      timerScanIntervalMs: options.scanIntervalMs ?? TEST_HUB_TIMINGS.scanIntervalMs.default,
      activityLockMs: ACTIVITY_LOCK_MS,
      ...(options.log ? { log: options.log } : {}),
    });
  }

  /** Every activity invocation, in the order they ended. */
  get activityCalls(): readonly ActivityInvocation[] {
    return this.record.activityCalls;
  }

  /** Every entity operation run, in order. */
  get entityOperations(): readonly EntityOperationRun[] {
    return this.record.entityOperations;
  }

  /**
   * Starts an orchestration: resolves to its instance id. An orchestrator name the test did not register is
   * refused (TestHubError UnknownFunction), as is an instance id already in use (the hub's TaskHubError).
   */
  async start(name: string, input?: unknown, options: { instanceId?: string } = {}): Promise<string> {
    const orchestrators = this.functions.orchestrators ?? {};
    if (!Object.hasOwn(orchestrators, name))
      throw new TestHubError(
        `No orchestrator named '${name}' was given to the test hub (it has: ${Object.keys(orchestrators).join(", ") || "none"}).`,
        "UnknownFunction",
        404,
      );
    const { instanceId } = await this.hub.startNew(name, {
      ...(options.instanceId !== undefined ? { instanceId: options.instanceId } : {}),
      input: input === undefined ? null : JSON.stringify(input),
    });
    return instanceId;
  }

  /** The instance's status (output and custom status parsed), undefined when there is none. */
  status(instanceId: string): Promise<InstanceStatus | undefined> {
    return this.hub.getStatus(instanceId);
  }

  /** Waits until the instance's status satisfies `done`; TestHubError WaitTimedOut with the last status after the timeout. */
  async waitFor(
    instanceId: string,
    done: (status: InstanceStatus) => boolean,
    options: { timeoutMs?: number } = {},
  ): Promise<InstanceStatus> {
    const status = await this.until(
      instanceId,
      () => this.hub.getStatus(instanceId),
      (s) => s !== undefined && done(s),
      options.timeoutMs,
      "the status",
    );
    return status as InstanceStatus;
  }

  /** Waits until the instance has ended: Completed, Failed or Terminated. */
  waitForCompletion(instanceId: string, options: { timeoutMs?: number } = {}): Promise<InstanceStatus> {
    return this.waitFor(instanceId, (s) => FINISHED.has(s.runtimeStatus), options);
  }

  /** Raises an external event on a running instance (TestHubError InstanceNotFound / InstanceNotRunning). */
  async raiseEvent(instanceId: string, eventName: string, data?: unknown): Promise<void> {
    const r = await this.hub.raiseEvent(
      instanceId,
      eventName,
      data === undefined ? null : JSON.stringify(data),
    );
    this.refused(instanceId, r);
  }

  /** Terminates a running instance (TestHubError InstanceNotFound / InstanceNotRunning). */
  async terminate(instanceId: string, reason?: string): Promise<void> {
    const r = await this.hub.terminate(instanceId, reason ?? null);
    this.refused(instanceId, r);
  }

  /** Suspends a running instance: it runs nothing until resumed (TestHubError InstanceNotFound / InstanceNotRunning). */
  async suspend(instanceId: string, reason?: string): Promise<void> {
    this.refused(instanceId, await this.hub.suspend(instanceId, reason ?? null));
  }

  /** Resumes a suspended instance (TestHubError InstanceNotFound / InstanceNotRunning). */
  async resume(instanceId: string, reason?: string): Promise<void> {
    this.refused(instanceId, await this.hub.resume(instanceId, reason ?? null));
  }

  /** Queues an operation for the entity `@name@key` (an entity the test did not register: UnknownFunction). */
  async signalEntity(name: string, key: string, operation: string, input?: unknown): Promise<void> {
    this.entityFunction(name);
    await this.hub.signalEntity(name, key, operation, input === undefined ? null : JSON.stringify(input));
  }

  /** The entity's state (parsed), undefined when it never ran an operation; `exists` false once deleted. */
  async readEntity(name: string, key: string): Promise<{ exists: boolean; state: unknown } | undefined> {
    this.entityFunction(name);
    const stored = await this.hub.readEntity(name, key);
    if (!stored) return undefined;
    return {
      exists: stored.exists,
      state: stored.state === undefined ? undefined : JSON.parse(stored.state),
    };
  }

  /** Waits until the entity's state (parsed; undefined before its first operation) satisfies `done`. */
  async waitForEntity(
    name: string,
    key: string,
    done: (state: unknown) => boolean,
    options: { timeoutMs?: number } = {},
  ): Promise<unknown> {
    const read = async () => (await this.readEntity(name, key))?.state;
    return this.until(entitySchedulerId(name, key), read, done, options.timeoutMs, "the entity's state");
  }

  /** The fire times of the instance's pending durable timers (retry delays included), earliest first. */
  async pendingTimers(instanceId: string): Promise<Date[]> {
    const { timers } = await this.hub.backend.readInstanceState(instanceId);
    return timers
      .map((t) => t.fireAtMs ?? Date.parse(t.fireAt))
      .sort((a, b) => a - b)
      .map((ms) => new Date(ms));
  }

  /**
   * Waits until the instance has a pending durable timer due after the clock's now: the earliest one's fire time.
   * (One due already is firing: the next one is what a test moves the clock to.)
   */
  async waitForTimer(instanceId: string, options: { timeoutMs?: number } = {}): Promise<Date> {
    const later = async () =>
      (await this.pendingTimers(instanceId)).filter((t) => t.getTime() > this.clock.now());
    const timers = await this.until(
      instanceId,
      later,
      (t) => t.length > 0,
      options.timeoutMs,
      "its next timer",
    );
    return timers[0] as Date;
  }

  /**
   * Waits until the instance has a pending durable timer, then moves the clock to its fire time (never back): the
   * timer fires. Resolves to that time; the episodes it starts run on (wait for what they do).
   */
  async fireNextTimer(instanceId: string, options: { timeoutMs?: number } = {}): Promise<Date> {
    const at = await this.waitForTimer(instanceId, options);
    await this.advance(Math.max(0, at.getTime() - this.clock.now()));
    return at;
  }

  /**
   * Waits until the instance ends, firing each durable timer it waits on as soon as it is pending (the clock moves to
   * it): for orchestrations whose timers are delays (retries, sleeps, polls). A timer that races other work
   * (`Task.any` of a timer and an activity or event) fires before that work ends: move the clock yourself there.
   * After `maxTimers` timers (default 10,000), TestHubError TooManyTimers.
   */
  async runToCompletion(
    instanceId: string,
    options: { timeoutMs?: number; maxTimers?: number } = {},
  ): Promise<InstanceStatus> {
    const maxTimers = options.maxTimers ?? 10_000;
    const ended = (s: InstanceStatus | undefined) => s !== undefined && FINISHED.has(s.runtimeStatus);
    for (let fired = 0; ; fired++) {
      const next = await this.until(
        instanceId,
        async () => {
          const status = await this.hub.getStatus(instanceId);
          if (ended(status)) return { status, timer: undefined };
          const now = this.clock.now();
          return { status, timer: (await this.pendingTimers(instanceId)).find((t) => t.getTime() > now) };
        },
        (v) => ended(v.status) || v.timer !== undefined,
        options.timeoutMs,
        "its end or its next timer",
      );
      if (next.timer === undefined) return next.status as InstanceStatus;
      if (fired >= maxTimers)
        throw new TestHubError(
          `'${instanceId}' had not ended after ${maxTimers} timers (the next at ${next.timer.toISOString()}).`,
          "TooManyTimers",
          400,
        );
      await this.advance(Math.max(0, next.timer.getTime() - this.clock.now()));
    }
  }

  /**
   * Moves durable time forward by `ms`: the timers due on the way fire (their episodes run on). Durable time never
   * goes back: a negative or non-finite `ms` is refused (TestHubError InvalidDuration).
   */
  async advance(ms: number): Promise<void> {
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0)
      throw new TestHubError(
        `Durable time moves forward by a finite number of ms, not ${String(ms)}.`,
        "InvalidDuration",
        400,
      );
    await this.clock.advance(ms);
  }

  /** Stops the hub: what runs ends, nothing is left behind (call it after each test). */
  stop(): Promise<void> {
    return this.hub.stop();
  }

  private refused(instanceId: string, r: "ok" | "notFound" | "notRunning"): void {
    if (r === "notFound")
      throw new TestHubError(`No instance '${instanceId}' exists.`, "InstanceNotFound", 404);
    if (r === "notRunning")
      throw new TestHubError(`The instance '${instanceId}' is not running.`, "InstanceNotRunning", 410);
  }

  private entityFunction(name: string): void {
    const names = Object.keys(this.functions.entities ?? {});
    if (!names.some((n) => n.toLowerCase() === name.toLowerCase()))
      throw new TestHubError(
        `No entity named '${name}' was given to the test hub (it has: ${names.join(", ") || "none"}).`,
        "UnknownFunction",
        404,
      );
  }

  /**
   * Reads until `done` holds, woken by the hub's change notifications of `instanceId` (the poll only a fallback);
   * the timeout is real time: a bound on a stuck test, not durable time.
   */
  private async until<T>(
    instanceId: string,
    read: () => Promise<T>,
    done: (value: T) => boolean,
    timeoutMs = this.waitTimeoutMs,
    what = "it",
  ): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      const left = deadline - performance.now();
      if (left <= 0)
        throw new TestHubError(
          `Waited ${timeoutMs} ms for '${instanceId}': ${what} never got there (last: ${JSON.stringify(value)}).`,
          "WaitTimedOut",
          408,
        );
      await this.hub.waitForChange(instanceId, Math.min(left, this.pollMs));
    }
  }
}

/** Starts a {@link TestHub} with the test's orchestrators, activities and entities. Stop it after the test. */
export async function startTestHub(options: TestHubOptions): Promise<TestHub> {
  const hub = new TestHub(options);
  await hub.hub.start();
  return hub;
}
