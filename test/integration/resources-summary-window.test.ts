import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";
import type { MeterSnapshot } from "../../packages/emulator/src/index.js";
import { ensureContainers } from "../../src/shared/containers.js";
import {
  appContext,
  type ResourceDocument,
  readSummary,
  summarizePage,
  type WindowClock,
} from "../../src/shared/resources/index.js";
import { putThroughFunction } from "../support/app-put.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";
import { meteredSince } from "../support/meter-tally.js";
import { summariesProcessor } from "../support/summaries-processor.js";

// The summaries trigger's recount window (src/shared/resources/summary-window.ts) on a real change feed processor
// over the emulator: a subscription changed many times while the handler waits out its window is recounted once, in
// the lease's next page — exact request tallies, and a clock the test drives (a wait ends when the test says so), so
// nothing here depends on how fast the machine is.

let t: TestEmulator;

beforeAll(async () => {
  t = await startTestEmulator();
  process.env.COSMOS_CONNECTION = t.emulator.connectionString;
  await ensureContainers(t.client);
});
afterAll(async () => {
  delete process.env.COSMOS_CONNECTION;
  await t?.close();
});

/** A clock whose waits end when the test releases them; `now` moves by the wait's length when it does. */
class DrivenClock implements WindowClock {
  at = 0;
  readonly waits: { ms: number; release: () => void; fail: (e: Error) => void }[] = [];
  now(): number {
    return this.at;
  }
  sleep(ms: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.waits.push({
        ms,
        release: () => {
          this.at += ms;
          resolve();
        },
        fail: reject,
      }),
    );
  }
  /** Waits (bounded by progress, not judged) until the handler has begun its `n`th wait. */
  async waiting(n: number): Promise<void> {
    await expect.poll(() => this.waits.length, { timeout: WAIT_MS }).toBeGreaterThanOrEqual(n);
    expect(this.waits).toHaveLength(n);
  }
}

const WINDOW_MS = 5_000;

async function setState(sub: string, id: string, provisioningState: ResourceDocument["provisioningState"]) {
  const item = appContext().containers.resources.item(id, sub);
  const { resource } = await item.read<ResourceDocument>();
  if (!resource) throw new Error(`no resource ${sub}/${id}`);
  await item.replace({ ...resource, provisioningState });
}

describe("the summaries trigger's recount window", () => {
  it("a subscription's changes over what would be several pages cost one recount per window, not one per page", async () => {
    const sub = "window-1";
    expect((await putThroughFunction(sub, "a")).status).toBe(201);
    const ctx = appContext();
    const clock = new DrivenClock();
    /** The resource documents of each page the handler got, as `id:state`. */
    const pages: string[][] = [];
    const processor = summariesProcessor(ctx, async (docs: unknown[]) => {
      pages.push(
        (docs as ResourceDocument[])
          .filter((d) => d.docType === "resource")
          .map((d) => `${d.id}:${d.provisioningState}`),
      );
      await summarizePage(ctx, docs, { windowMs: WINDOW_MS, maxItems: 1_000, clock });
    });
    await processor.start();
    try {
      // Page 1: the PUT's Accepted change, recounted; then the handler waits out its window.
      await clock.waiting(1);
      expect(pages).toEqual([["a:Accepted"]]);
      expect((await readSummary(ctx, sub))?.counts).toEqual({ Accepted: 1 });

      // Five changes while it waits: with nothing holding the lease, each could have been a page of its own (and a
      // recount each). The lease's feed is not read meanwhile: its next page is read once the handler returns.
      const before = t.emulator.meter.snapshot() as MeterSnapshot;
      await setState(sub, "a", "Provisioning");
      await setState(sub, "a", "Succeeded");
      expect((await putThroughFunction(sub, "b")).status).toBe(201);
      await setState(sub, "b", "Provisioning");
      await setState(sub, "b", "Failed");
      const byTest = meteredSince(t.emulator, before);
      // The test's own writes: no query, nothing in summaries.
      expect(byTest.resources?.query).toBeUndefined();
      expect(byTest.summaries).toBeUndefined();

      clock.waits[0]?.release();
      await clock.waiting(2);
      // One page holds the window's changes (the latest version of each document), and one recount covers them.
      expect(pages).toEqual([["a:Accepted"], ["a:Succeeded", "b:Failed"]]);
      // Tallied before the test's own read of the summary below.
      const window = meteredSince(t.emulator, before);
      expect((await readSummary(ctx, sub))?.counts).toEqual({ Succeeded: 1, Failed: 1 });
      // Five changes, one recount: one query (3.5 RU over the subscription's two resources) and the summary's replace
      // If-Match the ETag the first recount wrote (5.2), no read.
      expect(window.resources?.query).toEqual({ requests: 1, ru: 3.5 });
      expect(window.summaries).toEqual({ replace: { requests: 1, ru: 5.2 } });
      // The handler waited the whole window each time: the driven clock did not move during its recounts.
      expect(clock.waits.map((w) => w.ms)).toEqual([WINDOW_MS, WINDOW_MS]);

      // Changes in two windows are two recounts: one per window, each of them as exact.
      const second = t.emulator.meter.snapshot() as MeterSnapshot;
      await setState(sub, "b", "Succeeded");
      clock.waits[1]?.release();
      await clock.waiting(3);
      await setState(sub, "a", "Deleting");
      clock.waits[2]?.release();
      await clock.waiting(4);
      expect(pages.slice(2)).toEqual([["b:Succeeded"], ["a:Deleting"]]);
      const two = meteredSince(t.emulator, second);
      expect((await readSummary(ctx, sub))?.counts).toEqual({ Succeeded: 1, Deleting: 1 });
      expect(two.resources?.query).toEqual({ requests: 2, ru: 7 });
      expect(two.summaries).toEqual({ replace: { requests: 2, ru: 10.4 } });

      // The host fails during a wait (as one killed there would: the invocation never returns, no checkpoint): the
      // page is delivered again and recounted — the same counts, so a query and a read, and nothing written.
      await setState(sub, "a", "Succeeded");
      clock.waits[3]?.release();
      await clock.waiting(5);
      expect((await readSummary(ctx, sub))?.counts).toEqual({ Succeeded: 2 });
      const third = t.emulator.meter.snapshot() as MeterSnapshot;
      clock.waits[4]?.fail(new Error("the host died during its wait"));
      await clock.waiting(6);
      expect(pages.slice(4)).toEqual([["a:Succeeded"], ["a:Succeeded"]]);
      const again = meteredSince(t.emulator, third);
      expect(again.resources?.query).toEqual({ requests: 1, ru: 3.5 });
      expect(again.summaries).toEqual({ read: { requests: 1, ru: 1 } });
      expect((await readSummary(ctx, sub))?.counts).toEqual({ Succeeded: 2 });
    } finally {
      for (const w of clock.waits) w.release();
      await processor.stop();
    }
  });

  it("waits only the rest of the window, and not at all after a full page (the trigger is behind)", async () => {
    const sub = "window-2";
    expect((await putThroughFunction(sub, "a")).status).toBe(201);
    const ctx = appContext();
    const { resource } = await ctx.containers.resources.item("a", sub).read<ResourceDocument>();
    const page = [resource, { id: "op:x", docType: "operation", subscriptionId: sub }];
    // A clock that moves 1,300 ms during the recount: the handler waits the remaining 3,700.
    let at = 10_000;
    const slept: number[] = [];
    const clock: WindowClock = {
      now: () => at,
      sleep: async (ms) => {
        slept.push(ms);
      },
    };
    const moving: WindowClock = {
      now: () => {
        const now = at;
        at += 1_300;
        return now;
      },
      sleep: clock.sleep,
    };
    expect(await summarizePage(ctx, page, { windowMs: WINDOW_MS, maxItems: 3, clock: moving })).toEqual({
      changed: [sub],
      waitedMs: 3_700,
    });
    // A full page (as many changes as the trigger asks for): recounted, and the next page read at once.
    expect(await summarizePage(ctx, page, { windowMs: WINDOW_MS, maxItems: 2, clock })).toEqual({
      changed: [],
      waitedMs: 0,
    });
    // A page that outlasted its window, or no window at all: no wait either.
    const slow: WindowClock = {
      now: () => {
        at += WINDOW_MS;
        return at;
      },
      sleep: clock.sleep,
    };
    expect((await summarizePage(ctx, page, { windowMs: WINDOW_MS, maxItems: 3, clock: slow })).waitedMs).toBe(
      0,
    );
    expect((await summarizePage(ctx, page, { windowMs: 0, maxItems: 3, clock })).waitedMs).toBe(0);
    expect(slept).toEqual([3_700]);
    expect((await readSummary(ctx, sub))?.counts).toEqual({ Accepted: 1 });
  });
});
