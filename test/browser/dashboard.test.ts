/**
 * The dev host dashboard in headless Chromium (Debian's /usr/bin/chromium through playwright-core): two dev hosts
 * (child processes) share the fixture trigger's two leases on one emulator; the page on host A shows the owners the
 * lease container has; host B is killed (-9) and the page shows B's lease moving to A, and the hand-off listed.
 * The page makes no request outside its origin and logs no console error. Screenshot: test-output/dashboard.png.
 * Run with `npm run test:browser` (not part of `npm test`: it needs the browser).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WAIT_MS } from "../../bench/lib/until.js";
import type { DashboardState } from "../../packages/devhost/src/dashboard/types.js";
import { startTwoHosts, type TwoHosts, until } from "../support/two-hosts.js";

const outputDir = fileURLToPath(new URL("../../test-output", import.meta.url));
let hosts: TwoHosts;
let browser: Browser;

beforeAll(async () => {
  hosts = await startTwoHosts({
    env: {
      DEV_DASHBOARD_POLL_INTERVAL_MS: "500",
      DEV_DASHBOARD_MIN_REFRESH_MS: "250",
      // A hidden page's pace, far beyond the test's waits: any poll while hidden is one too many.
      DEV_DASHBOARD_HIDDEN_POLL_INTERVAL_MS: "600000",
    },
  });
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-gpu",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await hosts?.close();
});

/** `"<lease id> <owner>"` of the lease rows the page shows, sorted. */
async function shownOwnership(page: Page): Promise<string[]> {
  return page.$$eval('#leases tr[data-function="onThing"]', (rows) =>
    rows.map((r) => `${r.getAttribute("data-lease-id")} ${r.getAttribute("data-owner")}`).sort(),
  );
}

async function thisHostOwner(baseUrl: string): Promise<string> {
  return until(`${baseUrl}'s trigger owner`, async () => {
    const s = (await (await fetch(`${baseUrl}/_dev/api/state`)).json()) as DashboardState;
    return s.leases.ok ? (s.leases.data.triggers[0]?.thisHostOwner ?? undefined) : undefined;
  });
}

describe("dashboard in Chromium", () => {
  it("shows the lease container's owners, then the leases moving to the survivor when a host dies", async () => {
    const { a, b } = hosts;
    await hosts.settled();
    const ownerA = await thisHostOwner(a.baseUrl);
    const ownerB = await thisHostOwner(b.baseUrl);
    expect(ownerA).not.toBe(ownerB);

    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    page.setDefaultTimeout(WAIT_MS); // navigation and selectors: waits for outcomes, not judged durations
    const origin = new URL(a.baseUrl).origin;
    const outside: string[] = [];
    const consoleErrors: string[] = [];
    page.on("request", (r) => {
      if (new URL(r.url()).origin !== origin) outside.push(r.url());
    });
    page.on("console", (m) => {
      if (m.type() === "error") consoleErrors.push(m.text());
    });
    page.on("pageerror", (e) => consoleErrors.push(e.message));

    await page.goto(`${a.baseUrl}/_dev`);
    // The owners shown are the lease container's.
    // (Read again each time: on a loaded machine a renewal can come late, a lease move to the other host for a
    // moment, and balancing move it back; the page must show whatever the container holds once they agree.)
    const expected = await until(
      "the page to show the lease container's owners, one lease each",
      async () => {
        const now = await hosts.ownership();
        const owners = new Set(now.map((x) => x.split(" ")[1]));
        return owners.size === 2 && (await shownOwnership(page)).join() === now.join() ? now : undefined;
      },
    );
    expect(new Set(expected.map((x) => x.split(" ")[1]))).toEqual(new Set([ownerA, ownerB]));
    // "This host" is A's lease only.
    const mine = await page.$$eval('#leases tr.this-host[data-function="onThing"]', (rows) =>
      rows.map((r) => r.getAttribute("data-owner")),
    );
    expect(mine).toEqual([ownerA]);
    // The RU panel reads the other process's emulator meter.
    await page.waitForSelector('#ru tr[data-container="fixture/leases"]', { timeout: WAIT_MS });

    // Host B dies; its lease expires (3 s) and A takes it over.
    b.child.kill("SIGKILL");
    await b.exited;
    const moved = await until("the lease container to show both leases owned by A", async () => {
      const now = await hosts.ownership();
      return now.length === 2 && now.every((x) => x.endsWith(` ${ownerA}`)) ? now : undefined;
    });
    await until("the page to show both leases on A", async () =>
      (await shownOwnership(page)).join() === moved.join() ? true : undefined,
    );
    await page.waitForSelector(`#handoffs li[data-from="${ownerB}"][data-to="${ownerA}"]`, {
      timeout: WAIT_MS,
    });
    const mineNow = await page.$$eval('#leases tr.this-host[data-function="onThing"]', (rows) => rows.length);
    expect(mineNow).toBe(2);

    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: join(outputDir, "dashboard.png"), fullPage: true });

    // Hidden (another tab), the page stops polling at the visible pace; shown again, it asks at once.
    let polls = 0;
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/_dev/api/state") polls++;
    });
    // Run in the page (a string: the test's own typings have no DOM).
    const visibility = (hidden: boolean) =>
      page.evaluate(
        `Object.defineProperty(document, "hidden", { value: ${hidden}, configurable: true }); document.dispatchEvent(new Event("visibilitychange"));`,
      );
    await visibility(true);
    // At most the poll already scheduled at the visible pace (500 ms), then none for ten minutes.
    const hiddenSince = polls;
    await new Promise((r) => setTimeout(r, 4_000));
    expect(polls - hiddenSince).toBeLessThanOrEqual(1);
    const beforeShown = polls;
    await visibility(false);
    await until("a poll once the page is shown again", async () => (polls > beforeShown ? true : undefined));
    expect(outside).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await page.close();
  });
});
