import type { AppContext } from "./context.js";
import { updateSummaries } from "./summaries.js";

// Why the summaries trigger paces its own pages. A change feed processor waits feedPollDelay only after an empty
// read: while changes keep coming it reads page after page, and the trigger recounted a subscription once per page
// its changes fell in — so a flow's three state changes cost one to three recounts (a query, and a write when the
// counts moved) depending on how fast the machine ran. The Functions extension reads a lease's next page only after
// the handler of the previous one returned, and offers no shortest time between reads; so the handler recounts first
// and then waits out the rest of its window. Everything a subscription changes meanwhile arrives in the lease's next
// page, coalesced by the latest-version feed: one recount per subscription per window, however the changes fell.
//
// What that keeps: the recounts are done before the wait, and the checkpoint follows the handler, so a crash or a
// lease hand-off during the wait redelivers the page (a recount: idempotent) — nothing is lost, nothing is held in
// memory across pages, and hosts and restarts need no shared state. A full page means the trigger is behind: it
// reads on at once, so its lag stays bounded whatever the rate of changes.

/** The time source of the window: the real one, or a test's. */
export interface WindowClock {
  /** Milliseconds, monotonic. */
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: WindowClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface RecountWindow {
  /** SUMMARY_RECOUNT_WINDOW_MS: shortest time from one page's start to the next one's (0 = no wait). */
  windowMs: number;
  /** SUMMARY_MAX_ITEMS_PER_INVOCATION: a page this long (or longer) is full, and no wait follows it. */
  maxItems: number;
  clock?: WindowClock;
}

export interface PageOutcome {
  /** Subscriptions whose summary changed. */
  changed: string[];
  /** How long the handler waited after its recounts (ms; 0 after a full page or a page that outlasted the window). */
  waitedMs: number;
}

/**
 * The summaries trigger's handler: recounts each subscription the page touches (updateSummaries), then, unless the
 * page was full, waits until `windowMs` have passed since it started, so the lease's next page is read no sooner.
 */
export async function summarizePage(
  ctx: AppContext,
  documents: unknown[],
  window: RecountWindow,
): Promise<PageOutcome> {
  const clock = window.clock ?? systemClock;
  const started = clock.now();
  const changed = await updateSummaries(ctx, documents);
  if (documents.length >= window.maxItems) return { changed, waitedMs: 0 };
  const rest = Math.ceil(started + window.windowMs - clock.now());
  if (rest <= 0) return { changed, waitedMs: 0 };
  await clock.sleep(rest);
  return { changed, waitedMs: rest };
}
