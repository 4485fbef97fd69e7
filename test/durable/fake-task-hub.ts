import type {
  EntityFilter,
  InstanceFilter,
  InstanceStatus,
  RuntimeStatus,
  TaskHubClient,
} from "../../packages/devhost/src/durable/types.js";

/**
 * A FAKE TaskHubClient kept in memory: it stands in for the Cosmos DB task hub (built separately) so the durable
 * client's HTTP API can be tested against the real durable-functions DurableClient without a database. It keeps
 * instances and a log of calls; orchestrations move only when the test says so (complete, fail, setStatus). Its
 * clock is virtual: waitForChange never sleeps — `elapse(ms)` ends the waits whose time is up.
 */

interface FakeInstance {
  name: string;
  instanceId: string;
  status: RuntimeStatus;
  input: string | null;
  output: string | null;
  customStatus: string | null;
  createdTime: string;
  lastUpdatedTime: string;
  events: { EventType: number; Name?: string; Result?: string; Timestamp: string }[];
}

interface Waiter {
  instanceId: string;
  deadline: number;
  resolve: () => void;
}

export class HubRefusal extends Error {
  constructor(
    message: string,
    readonly statusCode: number,
  ) {
    super(message);
  }
}

const TERMINAL: RuntimeStatus[] = ["Completed", "Failed", "Terminated"];

export class FakeTaskHub implements TaskHubClient {
  readonly instances = new Map<string, FakeInstance>();
  /** Every call: method and arguments, in order. */
  readonly calls: { method: string; args: unknown[] }[] = [];
  /** Virtual time (ms since epoch). */
  clock = Date.parse("2026-01-01T00:00:00.000Z");
  /** The page size of list when no `top` is given (small, so paging is exercised). */
  defaultPageSize = 2;
  /** Called on each getStatus (tests move an instance after the n-th poll). */
  onGetStatus?: (instanceId: string, count: number) => void;
  private readonly waiters = new Set<Waiter>();
  private abortListeners = 0;
  private readonly waitListeners: ((instanceId: string) => void)[] = [];
  private nextId = 0;
  private getStatusCount = 0;
  /** Entity states by `@name@key` (JSON text; undefined = none), set by tests; signals are only recorded. */
  readonly entities = new Map<string, string | undefined>();

  constructor(readonly hubName = "TestHubName") {}

  now(): number {
    return this.clock;
  }

  /** Advances the virtual clock; waits whose deadline passed resolve. */
  elapse(ms: number): void {
    this.clock += ms;
    for (const w of [...this.waiters]) {
      if (w.deadline <= this.clock) w.resolve();
    }
  }

  /** Resolves when someone waits on the instance (a create-and-wait request reached waitForChange). */
  nextWait(instanceId: string): Promise<void> {
    if ([...this.waiters].some((w) => w.instanceId === instanceId)) return Promise.resolve();
    return new Promise((resolve) => {
      const listener = (id: string) => {
        if (id !== instanceId) return;
        this.waitListeners.splice(this.waitListeners.indexOf(listener), 1);
        resolve();
      };
      this.waitListeners.push(listener);
    });
  }

  private changed(instanceId: string): void {
    for (const w of [...this.waiters]) {
      if (w.instanceId === instanceId) w.resolve();
    }
  }

  private touch(inst: FakeInstance, status: RuntimeStatus, event: number): void {
    this.clock += 1;
    inst.status = status;
    inst.lastUpdatedTime = new Date(this.clock).toISOString();
    inst.events.push({ EventType: event, Timestamp: inst.lastUpdatedTime });
    this.changed(inst.instanceId);
  }

  /** The orchestrator returned `output` (JSON-serializable). */
  complete(instanceId: string, output: unknown): void {
    const inst = this.must(instanceId);
    inst.output = JSON.stringify(output);
    this.touch(inst, "Completed", 1);
  }

  fail(instanceId: string, message: string): void {
    const inst = this.must(instanceId);
    inst.output = JSON.stringify(message);
    this.touch(inst, "Failed", 2);
  }

  setStatus(instanceId: string, status: RuntimeStatus): void {
    this.touch(this.must(instanceId), status, 12);
  }

  private must(instanceId: string): FakeInstance {
    const inst = this.instances.get(instanceId);
    if (!inst) throw new Error(`fake hub: no instance ${instanceId}`);
    return inst;
  }

  private toStatus(
    inst: FakeInstance,
    showInput = true,
    showHistory = false,
    historyOutput = false,
  ): InstanceStatus {
    const parse = (t: string | null) => (t === null ? null : JSON.parse(t));
    return {
      name: inst.name,
      instanceId: inst.instanceId,
      runtimeStatus: inst.status,
      input: showInput ? parse(inst.input) : null,
      customStatus: parse(inst.customStatus),
      output: parse(inst.output),
      createdTime: inst.createdTime,
      lastUpdatedTime: inst.lastUpdatedTime,
      ...(showHistory
        ? { historyEvents: inst.events.map((e) => (historyOutput ? { ...e } : { ...e, Result: undefined })) }
        : {}),
    };
  }

  async startNew(name: string, options: { instanceId?: string; input?: string | null }) {
    this.calls.push({ method: "startNew", args: [name, options] });
    const instanceId = options.instanceId ?? `fake${String(++this.nextId).padStart(4, "0")}`;
    const current = this.instances.get(instanceId);
    if (current && !TERMINAL.includes(current.status)) {
      throw new HubRefusal(
        `An instance with the id '${instanceId}' already exists and is ${current.status}.`,
        409,
      );
    }
    this.clock += 1;
    const at = new Date(this.clock).toISOString();
    this.instances.set(instanceId, {
      name,
      instanceId,
      status: "Pending",
      input: options.input ?? null,
      output: null,
      customStatus: null,
      createdTime: at,
      lastUpdatedTime: at,
      events: [{ EventType: 0, Name: name, Timestamp: at }],
    });
    this.changed(instanceId);
    return { instanceId };
  }

  async getStatus(
    instanceId: string,
    options: { showHistory?: boolean; showHistoryOutput?: boolean; showInput?: boolean } = {},
  ) {
    this.calls.push({ method: "getStatus", args: [instanceId, options] });
    this.onGetStatus?.(instanceId, ++this.getStatusCount);
    const inst = this.instances.get(instanceId);
    if (!inst) return undefined;
    return this.toStatus(inst, options.showInput !== false, options.showHistory, options.showHistoryOutput);
  }

  private matching(filter: InstanceFilter): FakeInstance[] {
    return [...this.instances.values()]
      .filter((i) => !filter.createdTimeFrom || i.createdTime >= filter.createdTimeFrom)
      .filter((i) => !filter.createdTimeTo || i.createdTime <= filter.createdTimeTo)
      .filter((i) => !filter.runtimeStatus || filter.runtimeStatus.includes(i.status))
      .filter((i) => !filter.instanceIdPrefix || i.instanceId.startsWith(filter.instanceIdPrefix))
      .sort((a, b) => a.createdTime.localeCompare(b.createdTime) || a.instanceId.localeCompare(b.instanceId));
  }

  async list(filter: InstanceFilter) {
    this.calls.push({ method: "list", args: [filter] });
    let offset = 0;
    if (filter.continuationToken !== undefined) {
      const m = /^page:(\d+)$/.exec(filter.continuationToken);
      if (!m)
        throw new HubRefusal(
          `Malformed continuation token ${JSON.stringify(filter.continuationToken)}.`,
          400,
        );
      offset = Number(m[1]);
    }
    const all = this.matching(filter);
    const size = filter.top ?? this.defaultPageSize;
    const page = all.slice(offset, offset + size);
    const next = offset + size < all.length ? `page:${offset + size}` : undefined;
    return {
      instances: page.map((i) => this.toStatus(i, filter.showInput !== false)),
      ...(next ? { continuationToken: next } : {}),
    };
  }

  private signal(
    method: string,
    instanceId: string,
    args: unknown[],
    apply: (inst: FakeInstance) => void,
  ): "ok" | "notFound" | "notRunning" {
    this.calls.push({ method, args: [instanceId, ...args] });
    const inst = this.instances.get(instanceId);
    if (!inst) return "notFound";
    if (TERMINAL.includes(inst.status)) return "notRunning";
    apply(inst);
    return "ok";
  }

  async raiseEvent(instanceId: string, eventName: string, input: string | null) {
    return this.signal("raiseEvent", instanceId, [eventName, input], (inst) =>
      inst.events.push({ EventType: 15, Name: eventName, Timestamp: new Date(this.clock).toISOString() }),
    );
  }

  async terminate(instanceId: string, reason: string | null) {
    return this.signal("terminate", instanceId, [reason], (inst) => {
      inst.output = JSON.stringify(reason);
      this.touch(inst, "Terminated", 3);
    });
  }

  async suspend(instanceId: string, reason: string | null) {
    return this.signal("suspend", instanceId, [reason], (inst) => this.touch(inst, "Suspended", 19));
  }

  async resume(instanceId: string, reason: string | null) {
    return this.signal("resume", instanceId, [reason], (inst) => this.touch(inst, "Running", 20));
  }

  async purge(instanceId: string) {
    this.calls.push({ method: "purge", args: [instanceId] });
    return this.instances.delete(instanceId) ? 1 : 0;
  }

  async purgeMany(filter: InstanceFilter) {
    this.calls.push({ method: "purgeMany", args: [filter] });
    let n = 0;
    for (const inst of this.matching(filter)) {
      if (TERMINAL.includes(inst.status) && this.instances.delete(inst.instanceId)) n++;
    }
    return n;
  }

  async signalEntity(name: string, key: string, operation: string, input: string | null) {
    this.calls.push({ method: "signalEntity", args: [name, key, operation, input] });
  }

  async readEntity(name: string, key: string) {
    this.calls.push({ method: "readEntity", args: [name, key] });
    const id = `@${name.toLowerCase()}@${key}`;
    return this.entities.has(id) ? { exists: true, state: this.entities.get(id) } : undefined;
  }

  async listEntities(filter: EntityFilter) {
    this.calls.push({ method: "listEntities", args: [filter] });
    return { entities: [] };
  }

  async cleanEntityStorage(options: { removeEmptyEntities: boolean; releaseOrphanedLocks: boolean }) {
    this.calls.push({ method: "cleanEntityStorage", args: [options] });
    return { numberOfEmptyEntitiesRemoved: 0, numberOfOrphanedLocksRemoved: 0 };
  }

  waitForChange(instanceId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    this.calls.push({ method: "waitForChange", args: [instanceId, timeoutMs] });
    return new Promise((resolve) => {
      // However the wait ends (change, time, abort), it leaves nothing behind: the waiter and its abort listener go.
      const end = () => {
        if (this.waiters.delete(waiter)) this.abortListeners -= signal ? 1 : 0;
        signal?.removeEventListener("abort", end);
        resolve();
      };
      const waiter: Waiter = { instanceId, deadline: this.clock + timeoutMs, resolve: end };
      if (signal?.aborted) return resolve();
      this.waiters.add(waiter);
      if (signal) {
        signal.addEventListener("abort", end);
        this.abortListeners++;
      }
      for (const listener of [...this.waitListeners]) listener(instanceId);
    });
  }

  /** Waits not yet ended, and the abort listeners they hold (what a request left behind when both stay above 0). */
  get live(): { waiters: number; abortListeners: number } {
    return { waiters: this.waiters.size, abortListeners: this.abortListeners };
  }

  /** Calls of one method (for asserting what the handler asked the hub). */
  callsOf(method: string): unknown[][] {
    return this.calls.filter((c) => c.method === method).map((c) => c.args);
  }
}
