/**
 * The dev host dashboard's page: polls /_dev/api/state and redraws each panel with plain DOM and SVG. No framework,
 * nothing from another origin (the page's Content-Security-Policy allows only its own). See docs/dashboard.md.
 */
import type {
  DashboardState,
  DurableData,
  LeasesData,
  LocksData,
  Panel,
  RuData,
  TriggerLeases,
} from "../types.js";
import { clock, duration, interval, ru, shortOwner } from "./format.js";
import { plotGeometry } from "./plot.js";

type Child = Node | string | number | null | undefined | false;

function el(tag: string, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(typeof c === "number" ? String(c) : c);
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(
  tag: string,
  attrs: Record<string, string | number> = {},
  ...children: (Node | string)[]
): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  for (const c of children) e.append(c);
  return e;
}

function table(head: string[], rows: HTMLElement[]): HTMLElement {
  return el(
    "table",
    {},
    el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))),
    el("tbody", {}, ...rows),
  );
}

function body(id: string): HTMLElement {
  const b = document.querySelector<HTMLElement>(`#${id} .body`);
  if (!b) throw new Error(`no panel #${id}`);
  return b;
}

/** A panel: its content, or its source's error (only this panel empties). */
function show<T>(id: string, panel: Panel<T>, render: (data: T) => Node[]): void {
  const b = body(id);
  const section = b.parentElement;
  section?.classList.toggle("failed", !panel.ok && !panel.notConfigured);
  section?.classList.toggle("not-configured", !panel.ok && panel.notConfigured === true);
  b.replaceChildren(...(panel.ok ? render(panel.data) : [el("p", { class: "error" }, panel.error)]));
}

function triggerBlock(t: TriggerLeases): Node {
  const owners = el(
    "ul",
    { class: "owners" },
    ...t.owners.map((o) =>
      el(
        "li",
        { "data-owner": o.owner, class: o.thisHost ? "this-host" : undefined, title: o.owner },
        `${shortOwner(o.owner === "(none)" ? null : o.owner)}: ${o.leases} lease${o.leases === 1 ? "" : "s"}`,
        o.thisHost ? el("span", { class: "badge" }, "this host") : null,
      ),
    ),
  );
  const now = Date.now();
  const rows = t.leases.map((l) =>
    el(
      "tr",
      {
        "data-function": t.functionName,
        "data-lease-id": l.id,
        "data-lease-token": l.leaseToken,
        "data-owner": l.owner ?? "",
        class: [l.thisHost ? "this-host" : "", l.expired ? "expired" : ""].join(" ").trim() || undefined,
      },
      el("td", {}, l.range ?? l.leaseToken),
      el(
        "td",
        { title: l.owner ?? "" },
        shortOwner(l.owner),
        l.thisHost ? el("span", { class: "badge" }, "this host") : null,
      ),
      el(
        "td",
        { class: "num", title: l.estimatedLag === null ? lagUnknown(t) : undefined },
        l.estimatedLag === null ? "?" : l.estimatedLag,
      ),
      el("td", { class: "num" }, `${duration(l.lastWriteAgeMs)} ago`),
      el(
        "td",
        { class: "num" },
        l.expiresAt === null ? "-" : l.expired ? "expired" : `in ${duration(Date.parse(l.expiresAt) - now)}`,
      ),
    ),
  );
  return el(
    "div",
    { class: "trigger", "data-function": t.functionName },
    el(
      "h3",
      {},
      t.functionName,
      el("small", {}, ` ${t.monitored} → ${t.leaseContainer}, prefix '${t.prefix}'`),
    ),
    t.taskHub
      ? el(
          "p",
          { class: "note" },
          "The durable task hub's own dispatch processor (not a trigger): it follows the hub's container, so its lag is hub changes not yet dispatched.",
        )
      : null,
    t.error ? el("p", { class: "error" }, t.error) : null,
    t.lagError ? el("p", { class: "note" }, `lag: ${t.lagError}`) : null,
    t.leases.some((l) => l.estimatedLag === null)
      ? el("p", { class: "note legend", "data-legend": "lag" }, `lag ?: ${lagUnknown(t)}`)
      : null,
    owners,
    t.leases.length > 0
      ? table(["token / range", "owner", "lag", "last write", "expires"], rows)
      : el("p", { class: "note" }, "no leases yet"),
  );
}

/** What a `?` in the lag column means for this row (the page's legend and the cell's title). */
function lagUnknown(t: TriggerLeases): string {
  return t.lagError
    ? `not estimated (${t.lagError})`
    : "not estimated yet: lag is read every few seconds (DEV_DASHBOARD_LAG_INTERVAL_MS), a lease newer than the last read has none";
}

/** An instance's output (JSON text) as one line: a string as it is, anything else as compact JSON. */
function outputText(output: string | null): string {
  if (output === null) return "";
  try {
    const v: unknown = JSON.parse(output);
    return typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    return output;
  }
}

function renderLeases(d: LeasesData): Node[] {
  if (d.triggers.length === 0) return [el("p", { class: "note" }, "The app has no Cosmos DB triggers.")];
  return d.triggers.map(triggerBlock);
}

function renderHandoffs(d: LeasesData): Node[] {
  if (d.handoffs.length === 0) return [el("p", { class: "note" }, "none seen since the dev host started")];
  return [
    el(
      "ul",
      { class: "handoffs" },
      ...d.handoffs.map((h) =>
        el(
          "li",
          {
            "data-function": h.functionName,
            "data-lease-token": h.leaseToken,
            "data-from": h.from ?? "",
            "data-to": h.to ?? "",
          },
          `${clock(h.at)} ${h.functionName} lease ${h.leaseToken}: `,
          el("span", { title: h.from ?? "" }, shortOwner(h.from)),
          " → ",
          el("span", { title: h.to ?? "" }, shortOwner(h.to)),
        ),
      ),
    ),
  ];
}

function renderLocks(d: LocksData): Node[] {
  const caption = el("p", { class: "note" }, d.container);
  if (d.holders.length === 0) return [caption, el("p", { class: "note" }, "no lock is held")];
  return [
    caption,
    table(
      ["lock", "owner", "remaining TTL", "waiters"],
      d.holders.map((h) =>
        el(
          "tr",
          { "data-lock": h.name, class: h.expired ? "expired" : undefined },
          el("td", {}, h.name),
          el("td", { title: h.owner }, shortOwner(h.owner)),
          el("td", { class: "num" }, h.expired ? "expired" : duration(h.remainingMs)),
          el("td", { class: "num" }, h.waiters),
        ),
      ),
    ),
  ];
}

function renderDurable(d: DurableData): Node[] {
  const counts = el(
    "ul",
    { class: "counts" },
    ...Object.entries(d.counts)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([status, n]) => el("li", { "data-status": status }, `${status}: ${n}`)),
  );
  return [
    el("p", { class: "note" }, `task hub '${d.hubName}' in ${d.container}: ${d.total} instance(s)`),
    counts,
    d.latest.length === 0
      ? el("p", { class: "note" }, "no instances")
      : table(
          ["instance", "name", "status", "created", "updated", "output / failure reason"],
          d.latest.map((i) =>
            el(
              "tr",
              { "data-instance": i.instanceId, class: i.runtimeStatus === "Failed" ? "failed" : undefined },
              el("td", {}, i.instanceId),
              el("td", {}, i.name),
              el("td", {}, i.runtimeStatus),
              el("td", {}, clock(i.createdTime)),
              el("td", {}, clock(i.lastUpdatedTime)),
              el(
                "td",
                { class: i.runtimeStatus === "Failed" ? "output failure" : "output", "data-output": "" },
                // A block inside the cell: a table cell alone would widen to the whole text.
                el("div", { class: "output-text" }, outputText(i.output)),
              ),
            ),
          ),
        ),
  ];
}

function renderRu(d: RuData, historyMs: number): Node[] {
  const rows = d.containers.map((c) =>
    el(
      "tr",
      { "data-container": c.container },
      el("td", {}, c.container),
      el("td", { class: "num" }, ru(c.appRuPerSecond)),
      el("td", { class: "num" }, ru(c.dashboardRuPerSecond)),
      el("td", { class: "num" }, ru(c.appRuTotal)),
      el("td", { class: "num" }, ru(c.dashboardRuTotal)),
    ),
  );
  const width = 640;
  const height = 200;
  const g = plotGeometry(d.history, {
    width,
    height,
    now: Date.now(),
    spanMs: historyMs,
    padLeft: 40,
    padBottom: 18,
    padTop: 8,
    padRight: 24,
  });
  const plot = svg(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, class: "plot", role: "img", "aria-label": "app RU/s per container" },
    ...g.yTicks.flatMap((t) => [
      svg("line", { x1: 40, x2: width, y1: t.y, y2: t.y, class: "grid" }),
      svg("text", { x: 36, y: t.y + 4, "text-anchor": "end", class: "axis" }, t.label),
    ]),
    ...g.xTicks.map((t) =>
      svg("text", { x: t.x, y: height - 4, "text-anchor": "middle", class: "axis" }, t.label),
    ),
    svg("polyline", {
      points: g.dashboard.points,
      fill: "none",
      stroke: g.dashboard.color,
      "stroke-dasharray": "4 3",
    }),
    ...g.series.map((s) =>
      svg("polyline", {
        points: s.points,
        fill: "none",
        stroke: s.color,
        "stroke-width": 1.5,
        "data-series": s.name,
      }),
    ),
  );
  const legend = el(
    "ul",
    { class: "legend" },
    ...[...g.series, g.dashboard].map((s) => {
      const swatch = svg(
        "svg",
        { width: 12, height: 12 },
        svg("rect", { width: 12, height: 12, fill: s.color }),
      );
      return el("li", {}, swatch, ` ${s.name}`);
    }),
  );
  return [
    el(
      "p",
      { class: "note" },
      `from the ${d.source}; averages over ${duration(d.windowMs)}; the dashboard's own reads are not in the app's figures`,
    ),
    table(["container", "app RU/s", "dashboard RU/s", "app RU (total)", "dashboard RU (total)"], rows),
    plot,
    ...(g.clippedPeak !== undefined
      ? [el("p", { class: "note" }, `peaks up to ${ru(g.clippedPeak)} RU/s are clipped at the top`)]
      : []),
    legend,
  ];
}

let pollMs = 1500;
let hiddenPollMs = 15_000;
let historyMs = 300_000;
let next: ReturnType<typeof setTimeout> | undefined;

function render(s: DashboardState): void {
  pollMs = s.settings.pollIntervalMs;
  hiddenPollMs = s.settings.hiddenPollIntervalMs;
  historyMs = s.settings.historyMs;
  show("leases", s.leases, renderLeases);
  show("handoffs", s.leases, renderHandoffs);
  show("ru", s.ru, (d) => renderRu(d, historyMs));
  show("locks", s.locks, renderLocks);
  show("durable", s.durable, renderDurable);
}

function setStatus(text: string, failed: boolean): void {
  const status = document.getElementById("status");
  if (!status) return;
  status.textContent = text;
  status.classList.toggle("failed", failed);
}

let inFlight = false;

async function poll(): Promise<void> {
  // One poll at a time: the page shown again while one is in flight just lets that one schedule the next.
  if (inFlight) return;
  inFlight = true;
  try {
    const res = await fetch("/_dev/api/state", { cache: "no-store" });
    if (!res.ok) throw new Error(`state answered ${res.status}`);
    const state = (await res.json()) as DashboardState;
    render(state);
    setStatus(`updated ${clock(state.generatedAt)} · every ${interval(pollMs)}`, false);
  } catch (e) {
    // The dev host stopped or restarts: keep the last picture, say so, keep trying.
    setStatus(`no answer from the dev host (${e instanceof Error ? e.message : String(e)}); retrying`, true);
  } finally {
    inFlight = false;
    // A page nobody sees asks less often: its reads cost RU on the very containers it reports on.
    clearTimeout(next);
    next = setTimeout(() => void poll(), document.hidden ? hiddenPollMs : pollMs);
  }
}

// Shown again: a fresh picture at once, then the visible pace.
document.addEventListener("visibilitychange", () => {
  if (document.hidden) return;
  clearTimeout(next);
  void poll();
});

void poll();
