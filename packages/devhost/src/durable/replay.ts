import { customStatusFailure } from "./engine-limits.js";
import { HTTP_ACTIVITY_NAME } from "./http-activity.js";
import { httpPollStep, takesHttpPollId } from "./http-polling.js";
import {
  flattenActions,
  historyEvent,
  readOrchestratorOutcome,
  toJsonText,
  triggerInput,
} from "./protocol.js";
import { matchKnownActions, scheduleNewActions } from "./replay-actions.js";
import { endEpisode, failExecution } from "./replay-end.js";
import {
  type Failure,
  openRun,
  type ReplayResult,
  type ReplayRun,
  scheduleTask,
  timerWork,
} from "./replay-run.js";
import { type Bookkeeping, retryStep, takesRetryId } from "./retries.js";
import {
  type EngineLimits,
  type HistoryEvent,
  HistoryEventType,
  type OrchestrationState,
  type OrchestratorInvoker,
  type OrchestratorReply,
} from "./types.js";

/**
 * The one replay of a work item (engine.ts gathers its events): the orchestrator is handed its stored history +
 * OrchestratorStarted(now) + the new events, and what it returns decides the episode. Read top-down: the new
 * events and their own consequences (retries, callHttp polls, a lock granted); the orchestrator's reply; its
 * actions, the known ones checked and the new ones scheduled (replay-actions.ts); the end (replay-end.ts). Any
 * step may instead fail the execution, which ends the episode there. Pure except for the injected orchestrator
 * call.
 */
export async function replay(
  state: OrchestrationState,
  incoming: HistoryEvent[],
  at: string,
  invoke: OrchestratorInvoker,
  limits: EngineLimits,
): Promise<ReplayResult> {
  const { run, expired } = takeIncoming(state, incoming, at, limits);
  // A retryable task failed past its retry timeout: the SDK would wait for ever (retries.ts, expiredFailure).
  if (expired) return failExecution(run, expired);
  const answer = await askOrchestrator(run, invoke);
  if ("failure" in answer) return failExecution(run, answer.failure);
  const leaves = flattenActions(answer.reply.actions);
  const mismatch = matchKnownActions(run, leaves);
  if (mismatch) return failExecution(run, mismatch);
  const scheduled = scheduleNewActions(run, leaves.slice(run.book.leaves.length));
  if ("failure" in scheduled) return failExecution(run, scheduled.failure);
  return endEpisode(run, answer.reply, scheduled.continueAsNew);
}

/**
 * The replay's input: after OrchestratorStarted, each new event with its own consequences, decided before the
 * generator resumes — a retryable task's failed attempt sets its retry timer, that timer firing starts the next
 * attempt, a callHttp's 202 sets its poll timer and that timer firing sends the next poll, the grant of the section this
 * execution waits for makes it hold the lock. `expired`: the first retryable task that failed past its timeout.
 */
function takeIncoming(
  state: OrchestrationState,
  incoming: HistoryEvent[],
  at: string,
  limits: EngineLimits,
): { run: ReplayRun; expired: Failure | undefined } {
  const run = openRun(state, at, limits);
  let expired: Failure | undefined;
  for (const ev of inSdkOrder(run.book, incoming, at)) {
    const e = takeEvent(run, ev);
    expired ??= e;
  }
  if (run.book.lock?.held) run.held = { ...run.book.lock };
  return { run, expired };
}

/**
 * The events that take ids of their own (a retry's timer or attempt, retries.ts; a callHttp poll, http-polling.ts)
 * go first: the SDK, which resumes the generator after each event, counts their ids before any id of a new action,
 * as the engine does.
 */
function inSdkOrder(book: Bookkeeping, incoming: HistoryEvent[], at: string): HistoryEvent[] {
  const now = new Date(at);
  const retrying = incoming.filter((e) => takesRetryId(book, e, now) || takesHttpPollId(book, e));
  return retrying.length === 0 ? incoming : [...retrying, ...incoming.filter((e) => !retrying.includes(e))];
}

/** One new event into the episode, with what it schedules itself; the failure when it expired a retryable task. */
function takeEvent(run: ReplayRun, ev: HistoryEvent): Failure | undefined {
  const { book, state, at, newEvents, work } = run;
  newEvents.push(ev);
  // The grant of the section this execution waits for: it holds the lock from here on.
  if (ev.EventType === HistoryEventType.EventRaised && book.lock && ev.Name === book.lock.id) {
    book.lock.held = true;
  }
  const retry = retryStep(book, ev, at);
  if (retry?.kind === "timer") {
    newEvents.push(historyEvent(HistoryEventType.TimerCreated, at, { FireAt: retry.fireAt }, retry.timerId));
    work.push(timerWork(state, retry.timerId, retry.fireAt));
  } else if (retry?.kind === "attempt") {
    const t = retry.track;
    scheduleTask(run, t.kind, t.name, t.input, t.taskId, { track: t, version: t.version });
  }
  const poll = httpPollStep(book, ev, at);
  if (poll?.kind === "timer") {
    newEvents.push(historyEvent(HistoryEventType.TimerCreated, at, { FireAt: poll.fireAt }, poll.timerId));
    work.push(timerWork(state, poll.timerId, poll.fireAt));
  } else if (poll?.kind === "poll") {
    scheduleTask(run, "activity", HTTP_ACTIVITY_NAME, poll.request, poll.taskId);
  }
  return retry?.kind === "expired" ? retry : undefined;
}

/**
 * The orchestrator on the stored history + this episode's events: its reply, or why the execution fails (it
 * threw or returned no state, or its custom status is over the limit). A custom status within the limit is kept
 * even when the orchestrator failed.
 */
async function askOrchestrator(
  run: ReplayRun,
  invoke: OrchestratorInvoker,
): Promise<{ reply: OrchestratorReply } | { failure: Failure }> {
  const { state, newEvents } = run;
  const history = [...state.history, ...newEvents];
  const outcome = readOrchestratorOutcome(await invoke(state.name, triggerInput(state, history)));
  const reply = "reply" in outcome ? outcome.reply : undefined;
  const statusText = reply?.customStatus === undefined ? undefined : toJsonText(reply.customStatus);
  const statusProblem = customStatusFailure(statusText);
  if (statusProblem) return { failure: statusProblem };
  if (statusText !== undefined) run.next = { ...run.next, customStatus: statusText };
  if ("failure" in outcome) return { failure: { reason: outcome.failure, details: reply?.failureDetails } };
  return { reply: outcome.reply };
}
