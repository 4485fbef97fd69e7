/**
 * The conformance suite's dispatch feed: what is written arrives, a page whose handler threw comes again, a stop
 * fires the page's signal and waits for the page, and the lease goes on to another feed from its checkpoint. A feed
 * reads every document of the hub (other tests' too): each test looks only at its own instances.
 */
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../bench/lib/until.js";
import type {
  DispatchContext,
  DispatchFeed,
  DispatchHandler,
  TaskHubBackend,
} from "../../../packages/devhost/src/durable/backend.js";
import type { AnyDoc } from "../../../packages/devhost/src/durable/documents.js";
import { feedOptions, instance, message, type Suite, stopWithin, uniqueId } from "./fixtures.js";

interface Recorded {
  feed: DispatchFeed;
  /** Deliveries of this test's documents, in order: `<instanceId> <id>` and the document. */
  got: { key: string; doc: AnyDoc }[];
  errors: unknown[];
  lost: string[];
  acquired: string[];
}

/**
 * Opens a feed whose handler records this test's documents (those of instances `<prefix>…`) and then runs
 * `also` on them (a page of other documents resolves at once).
 */
function record(
  b: TaskHubBackend,
  prefix: string,
  name: string,
  also?: (ours: AnyDoc[], context: DispatchContext) => Promise<void>,
): Recorded {
  const r: Omit<Recorded, "feed"> = { got: [], errors: [], lost: [], acquired: [] };
  const mine = `${b.hubName}|${prefix}`;
  const handler: DispatchHandler = async (docs, context) => {
    const ours = docs.filter((d) => d.pk.startsWith(mine));
    for (const doc of ours) r.got.push({ key: `${doc.pk.slice(b.hubName.length + 1)} ${doc.id}`, doc });
    if (ours.length > 0 && also) await also(ours, context);
  };
  return { ...r, feed: b.openDispatch(handler, feedOptions(name, r)) };
}

const has = (r: Recorded, key: string) => r.got.some((g) => g.key === key);
const fired = (signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });

export function dispatchTests(s: Suite): void {
  describe("dispatch feed", () => {
    it("delivers what is written, before the feed started and after, and the latest version of a document", async () => {
      const b = s.backend();
      const p = uniqueId("feed");
      await b.createInstance(instance(b.hubName, `${p}-1`));
      const r = record(b, p, `${p}-host`);
      try {
        await r.feed.start();
        expect(r.feed.instanceName).toBe(`${p}-host`);
        await b.addMessage(message(b.hubName, `${p}-1`, "m", 1));
        const created = await b.createInstance(instance(b.hubName, `${p}-2`));
        await b.replaceInstance(
          instance(b.hubName, `${p}-2`, { customStatus: '"v2"' }),
          created.created ? created.etag : "",
        );
        await waitUntil("the documents delivered", () =>
          r.got.some(
            (g) => g.key === `${p}-2 instance` && g.doc.kind === "instance" && g.doc.customStatus === '"v2"',
          ),
        );
        expect(has(r, `${p}-1 instance`)).toBe(true);
        expect(has(r, `${p}-1 msg-m`)).toBe(true);
        expect(r.feed.ownedLeaseTokens().length).toBeGreaterThan(0);
      } finally {
        await stopWithin(r.feed);
      }
    });

    it("delivers a page again when its handler threw, and reports the failure", async () => {
      const b = s.backend();
      const p = uniqueId("throw");
      const failure = new Error("the handler failed once");
      let failed = false;
      const r = record(b, p, `${p}-host`, async () => {
        if (failed) return;
        failed = true;
        throw failure;
      });
      try {
        await r.feed.start();
        await b.addMessage(message(b.hubName, `${p}-1`, "m", 1));
        await waitUntil(
          "the page delivered again",
          () => r.got.filter((g) => g.key === `${p}-1 msg-m`).length >= 2,
        );
        expect(r.errors).toContain(failure);
      } finally {
        await stopWithin(r.feed);
      }
    });

    it("stops: the page in flight sees its signal fire, the stop waits for it, the lease is given up", async () => {
      const b = s.backend();
      const p = uniqueId("stop");
      let held: AbortSignal | undefined;
      let returned = false;
      const r = record(b, p, `${p}-host`, async (_docs, context) => {
        held = context.signal;
        await fired(context.signal);
        returned = true;
      });
      try {
        await r.feed.start();
        await b.addMessage(message(b.hubName, `${p}-1`, "m", 1));
        await waitUntil("the page in the handler", () => held !== undefined);
        expect(held?.aborted).toBe(false);
      } finally {
        // Bounded (as every stop here): a feed that waited for the page before firing its signal would hang.
        await stopWithin(r.feed);
      }
      expect(held?.aborted).toBe(true);
      expect(returned).toBe(true);
      expect(r.feed.ownedLeaseTokens()).toEqual([]);
      expect(r.lost.length).toBeGreaterThan(0);
    });

    it("hands the lease on: once the first feed stops, a second goes on from its checkpoint", async () => {
      const b = s.backend();
      const p = uniqueId("takeover");
      const first = record(b, p, `${p}-first`);
      const second = record(b, p, `${p}-second`);
      try {
        await first.feed.start();
        await b.addMessage(message(b.hubName, `${p}-1`, "before", 1));
        await waitUntil("the first feed's page", () => has(first, `${p}-1 msg-before`));
        await second.feed.start();
        await stopWithin(first.feed);
        expect(first.feed.ownedLeaseTokens()).toEqual([]);
        await b.addMessage(message(b.hubName, `${p}-1`, "after", 2));
        await waitUntil("the second feed's page", () => has(second, `${p}-1 msg-after`));
        expect(second.feed.ownedLeaseTokens().length).toBeGreaterThan(0);
        expect(second.acquired.length).toBeGreaterThan(0);
        expect(has(first, `${p}-1 msg-after`)).toBe(false);
      } finally {
        await stopWithin(first.feed);
        await stopWithin(second.feed);
      }
    });

    it("reads a page cut short by a crash again: an abandoned feed's page goes to the next feed", async () => {
      const b = s.backend();
      const p = uniqueId("abandon");
      const release = new AbortController();
      let inHandler = false;
      let returned = false;
      const crashing = record(b, p, `${p}-crashing`, async (_docs, context) => {
        inHandler = true;
        await fired(AbortSignal.any([context.signal, release.signal]));
        returned = true;
      });
      const next = record(b, p, `${p}-next`);
      try {
        await crashing.feed.start();
        await b.addMessage(message(b.hubName, `${p}-1`, "cut", 1));
        await waitUntil("the page in the crashing feed", () => inHandler);
        await crashing.feed.abandon();
        // The page ends after the crash (its signal fired): that must not checkpoint it.
        await waitUntil("the crashed feed's page ended", () => returned);
        expect(release.signal.aborted).toBe(false);
        await next.feed.start();
        await waitUntil("the page read again", () => has(next, `${p}-1 msg-cut`));
      } finally {
        release.abort();
        await stopWithin(next.feed);
      }
    });
  });
}
