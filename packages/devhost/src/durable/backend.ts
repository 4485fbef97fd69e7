import { CosmosFeedError } from "@cosmos-feed/core/errors";
import type {
  ActivityDoc,
  AnyDoc,
  InstanceDoc,
  MessageDoc,
  OutboxDoc,
  PartitionSnapshot,
  TimerDoc,
  WorkDoc,
} from "./documents.js";
import type { EntityRow } from "./status-view.js";
import type { EntityFilter, InstanceFilter } from "./types.js";

/**
 * The task hub's storage interface (docs/durable-design.md, "The backend"), in the verbs of a work item's life as
 * durabletask-go's `backend.Backend` names them: create an instance, add a message, get / complete / abandon an
 * orchestration work item, claim an activity work item, read an instance and its state, query, purge, the pending
 * work a crashed host left, and the dispatch feed that brings other hosts' writes. The client operations, the
 * dispatcher, the activity worker, the timers, the entity queries and the dashboard go through it and through
 * nothing else; two backends implement it — Cosmos DB (`cosmos-backend/`, the documents of docs/durable-design.md
 * "Storage") and memory (`memory-backend.ts`) — and one conformance suite (test/durable/backend-conformance.ts)
 * runs on both.
 *
 * Everything of one instance is a partition of documents (`documents.ts`); an instance document's `_etag` decides
 * every race. A lost race is an outcome ({@link CommitOutcome}), not an error: the caller re-reads and redoes. A
 * backend's own failure (the store refused with a status that is no race) throws {@link TaskHubStorageError}.
 */
export interface TaskHubBackend {
  /** The task hub's name (host.json `extensions.durableTask.hubName`). */
  readonly hubName: string;
  /** Where the hub's documents are, for log lines ("Cosmos DB db/container", "memory"). */
  readonly describe: string;

  // ---- instances ---------------------------------------------------------------------------------------------

  /** Creates an instance document; when one exists already, its current document (undefined if it went since). */
  createInstance(doc: InstanceDoc): Promise<CreateOutcome>;
  /** Replaces an instance document If-Match `ifMatch` (a restart of a finished instance); false on a lost race. */
  replaceInstance(
    doc: InstanceDoc,
    ifMatch: string,
  ): Promise<{ replaced: true; etag: string } | { replaced: false }>;
  /** The instance document, or undefined. */
  readInstance(instanceId: string): Promise<InstanceDoc | undefined>;
  /** Everything of one instance: its document, the current execution's history, its pending work. */
  readInstanceState(instanceId: string): Promise<PartitionSnapshot>;
  /**
   * One page of the hub's orchestration instances (entities left out) that the filter selects. A continuation token
   * the backend did not issue throws an error the HTTP API answers 400 InvalidContinuationToken (http-errors.ts:
   * `statusCode` 400, or the SDK's own refusal of the token). An instance present throughout the paging is seen
   * once; one deleted meanwhile may still be seen. The documents come without their history tail
   * (`historyTail`, `historyTailBytes`): a listing needs none of it, and on Cosmos DB a query is charged per KiB
   * it returns.
   */
  queryInstances(filter: InstanceFilter): Promise<Page<InstanceDoc>>;
  /**
   * Deletes the instance of `snapshot` and everything of it (the instance document last, If-Match its etag in the
   * snapshot): "purged", "gone" (it was not there), or "changed" (it changed since the snapshot: read again).
   */
  deleteInstance(snapshot: PartitionSnapshot): Promise<"purged" | "gone" | "changed">;

  // ---- messages ----------------------------------------------------------------------------------------------

  /** Stores a message for its instance; "exists" when a message of that key is stored already (idempotent). */
  addMessage(doc: MessageDoc): Promise<"added" | "exists">;
  /** Delivers an outbox document: its message stored in the target instance (idempotent), then the outbox deleted. */
  deliverOutbox(outbox: OutboxDoc, message: MessageDoc): Promise<void>;

  // ---- orchestration work items ------------------------------------------------------------------------------

  /**
   * An instance's state ready for a work item: a commit left half-applied (another host's, or a crashed one's) is
   * finished first, and leftovers of commits that never decided are removed (`swept` counts them). Throws when the
   * instance keeps changing under it (the attempt fails; the dispatcher retries).
   */
  getOrchestrationWorkItem(instanceId: string): Promise<{ snapshot: PartitionSnapshot; swept: number }>;
  /**
   * Commits a work item's result all or nothing: the instance document (created, or replaced If-Match), its new
   * documents and the deletion of what it consumed. A lost race — the instance changed or appeared since it was
   * read — is `{committed: false}`.
   */
  completeOrchestrationWorkItem(commit: WorkItemCommit): Promise<CommitOutcome>;
  /**
   * Leaves results this host holds for an instance to whoever runs it next: each stored as a message together with
   * the deletion of its source document (an activity's or a timer's), so each is applied once. A result whose
   * message exists already has its source deleted; one whose source is gone was recorded already and is skipped.
   * Returns the results stored now.
   */
  abandonOrchestrationWorkItem(instanceId: string, results: HandedOverResult[]): Promise<HandedOverResult[]>;
  /** Deletes documents of an instance that nothing reads any more (old executions' history); a missing one is fine. */
  deleteDocuments(instanceId: string, ids: string[]): Promise<void>;

  // ---- activity work items -----------------------------------------------------------------------------------

  /**
   * Claims a stored activity (task hubs written before the instance claim) for `owner` until `until` (ms since the
   * epoch), If-Match its etag: the claimed document, or undefined when another host changed or ran it first.
   */
  claimActivityWorkItem(doc: ActivityDoc, owner: string, until: number): Promise<ActivityDoc | undefined>;

  // ---- entities ----------------------------------------------------------------------------------------------

  /** One page of the hub's entities that have a state (the listing). */
  queryEntities(filter: EntityFilter): Promise<Page<EntityRow>>;
  /** One page of all the hub's entities, state or not (the clean-up walks them): their ids and entity bookkeeping. */
  queryEntityRecords(continuationToken: string | undefined, pageSize: number): Promise<Page<EntityRecord>>;

  // ---- recovery and dispatch ---------------------------------------------------------------------------------

  /** Work another host may have left: timers due by `horizon`, unclaimed activities, outbox, stages, starts, claims. */
  scanPending(now: number, horizon: number): Promise<PendingWork>;
  /**
   * The documents other hosts (and this one) write, delivered to `handler` page by page under a lease: a page is
   * checkpointed once its handler resolves (else delivered again), and its `signal` fires when its lease moves.
   */
  openDispatch(handler: DispatchHandler, options: DispatchOptions): DispatchFeed;
}

/** A page of a query and where the next one starts. */
export interface Page<T> {
  /** The page's items. */
  items: T[];
  /** Where the next page starts; absent on the last page. */
  continuationToken?: string;
}

/**
 * The outcome of `createInstance`: created (with the new document's etag), or the instance document that exists
 * already (undefined if it went since).
 */
export type CreateOutcome =
  | { created: true; etag: string }
  | { created: false; existing: InstanceDoc | undefined };

/**
 * A work item's commit: the instance document to write (replace If-Match `ifMatch`, or create when `ifMatch` is
 * undefined; `before` is the document as stored now, which a commit applied in steps leaves visible until it is
 * whole), the documents it adds and the ids it consumed. `token` names the steps' documents (unique per attempt).
 */
export interface WorkItemCommit {
  /** The task hub's name. */
  hub: string;
  /** The instance the work item is for. */
  instanceId: string;
  /**
   * The instance document to write: replaced If-Match `ifMatch`, created when `ifMatch` is undefined; `before` is
   * the document as stored now.
   */
  instance?: { body: InstanceDoc; ifMatch?: string; before?: InstanceDoc };
  /** Documents the work item adds (history chunks, messages, activities, timers, outbox). */
  upserts: WorkDoc[];
  /** Ids of the documents it consumed (to delete). */
  deletes: string[];
  /** Names the documents of the commit's steps (unique per attempt). */
  token: string;
}

/**
 * The outcome of a commit: stored, with the instance's new etag (undefined when another host finished applying it,
 * so this host cannot name the etag), or a lost race (`status` the store's answer: 412, 409 or 404).
 */
export type CommitOutcome =
  | { committed: true; etag: string | undefined }
  | { committed: false; status: number };

/** A result handed over as a message; `sourceId` the activity or timer document it ends, when it has one. */
export interface HandedOverResult {
  /** The result as a message for the instance. */
  message: MessageDoc;
  /** The activity or timer document the result ends, when it has one. */
  sourceId?: string;
}

/** An entity's instance id and the bookkeeping the clean-up reads. */
export interface EntityRecord {
  /** The entity's instance id (`@name@key`). */
  instanceId: string;
  /** The entity engine's bookkeeping: whether the entity exists, and who holds its lock. */
  engine?: { entity?: { exists?: boolean; lockedBy?: unknown } };
}

/** Pending work a host looks for periodically (a crashed host's, or what a checkpointed feed page held). */
export interface PendingWork {
  /** Timers due by the scan's horizon. */
  timers: TimerDoc[];
  /** Stored activities no host has claimed (or whose claim expired). */
  activities: ActivityDoc[];
  /** Outbox documents not delivered yet. */
  outbox: OutboxDoc[];
  /** Instances with a commit in steps or a start waiting (a start not applied for a minute). */
  staged: InstanceDoc[];
  /** Instances whose activity claim expired (a dead host's activities). */
  claims: (InstanceDoc & { claim: NonNullable<InstanceDoc["claim"]> })[];
}

/** A dispatch page's context: `signal` fires when the lease it came under is lost. */
export interface DispatchContext {
  /** Fires when the lease the page came under is lost: the page's work stops before committing. */
  signal: AbortSignal;
}

/** Handles one page of the dispatch feed's documents; the page is checkpointed once it resolves. */
export type DispatchHandler = (docs: AnyDoc[], context: DispatchContext) => Promise<void>;

/**
 * Options of `TaskHubBackend.openDispatch`: the lease owner name, the timings (ms) and the lease and error
 * callbacks.
 */
export interface DispatchOptions {
  /** This host's name as a lease owner. */
  instanceName?: string;
  /** How long the feed waits when nothing is new, and the least time between two reads (ms). */
  pollDelayMs: number;
  /** Lease timings of a feed with leases (ms); the backend's defaults otherwise. */
  leaseAcquireIntervalMs?: number;
  /** How long a lease not renewed stays its owner's (ms). */
  leaseExpirationIntervalMs?: number;
  /** How often a held lease is renewed (ms). */
  leaseRenewIntervalMs?: number;
  /** A lease was lost or released: instances it covered stop committing here (ownership.ts). */
  leaseLost: (token: string, reason: string) => void;
  /** A lease was acquired. */
  leaseAcquired?: (token: string) => void;
  /** A failure the feed recovers from by itself (logged). */
  error: (e: unknown) => void;
}

/** A running dispatch feed. */
export interface DispatchFeed {
  /** Starts reading: acquires leases and delivers pages to the handler. */
  start(): Promise<void>;
  /**
   * Hands the leases off after the pages in flight end (within `abortSignal`): their signals fire first, and
   * `leaseLost` is called for each lease given up.
   */
  stop(options?: { abortSignal?: AbortSignal }): Promise<void>;
  /** Stops without handing anything off (a crash, for tests); the signals of the pages in flight fire. */
  abandon(): Promise<void>;
  /** The lease tokens held right now. */
  ownedLeaseTokens(): string[];
  /** The lease owner name, once started. */
  readonly instanceName: string | undefined;
  /** Where the leases are, for the dashboard (prefix, expiration); undefined for a feed without leases. */
  readonly leases?: { prefix: string; leaseExpirationIntervalMs: number };
}

/**
 * A store refused an operation with a status that is no lost race; `storeStatus` is the store's answer (not an HTTP
 * status of the durable API: such a failure is the hub's own, a 500 there).
 */
export class TaskHubStorageError extends CosmosFeedError {
  /** A store's refusal: `storeStatus` its status code; `code` "TaskHubStorage", no `statusCode`. */
  constructor(
    message: string,
    /** The store's status code (e.g. 400, 403, 500). */
    readonly storeStatus: number,
  ) {
    super(message, { code: "TaskHubStorage" });
  }
}
