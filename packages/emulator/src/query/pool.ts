import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { QueryJob, QueryJobResult } from "./jobs.js";

/**
 * Worker threads that run expensive queries, so that one of them cannot stall every other client of the
 * emulator (the event loop keeps serving point reads and writes meanwhile). Workers start on first use,
 * are shared by all emulators in the process, and never keep the process alive.
 */

type Pending = { job: QueryJob; resolve: (r: QueryJobResult) => void; reject: (e: Error) => void };

/** Worker threads at most: the machine's cores but one (the event loop's), at least one, at most 4. */
const MAX_WORKERS = Math.max(1, Math.min(4, availableParallelism() - 1));

interface Slot {
  worker: Worker;
  busy?: Pending;
}

const slots: Slot[] = [];
const queue: Pending[] = [];
let nextId = 1;

export function runInWorker(job: Omit<QueryJob, "id">): Promise<QueryJobResult> {
  return new Promise((resolve, reject) => {
    queue.push({ job: { ...job, id: nextId++ }, resolve, reject });
    dispatch();
  });
}

/** Queries being executed by a worker thread right now. */
export function queriesInWorkers(): number {
  return slots.filter((s) => s.busy).length;
}

function dispatch(): void {
  while (queue.length > 0) {
    let slot = slots.find((s) => !s.busy);
    if (!slot && slots.length < MAX_WORKERS) slot = spawn();
    if (!slot) return;
    const next = queue.shift() as Pending;
    slot.busy = next;
    slot.worker.ref();
    slot.worker.postMessage(next.job);
  }
}

function spawn(): Slot {
  const worker = createWorker();
  const slot: Slot = { worker };
  worker.unref();
  worker.on("message", (result: QueryJobResult) => {
    const done = slot.busy;
    slot.busy = undefined;
    worker.unref();
    done?.resolve(result);
    dispatch();
  });
  const lost = (e: Error) => {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    const done = slot.busy;
    slot.busy = undefined;
    done?.reject(e);
    dispatch();
  };
  worker.on("error", lost);
  worker.on("exit", (code) => lost(new Error(`The query worker exited (code ${code}).`)));
  slots.push(slot);
  return slot;
}

/** The ESM entry of tsx's API (`tsx/esm/api`, import condition), found through tsx's package.json. */
function tsxEsmApi(from: string): string {
  const require = createRequire(from);
  const pkgPath = require.resolve("tsx/package.json");
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as {
    exports: Record<string, string | { import?: string | { default?: string } }>;
  };
  const entry = pkg.exports["./esm/api"];
  const target =
    typeof entry === "string"
      ? entry
      : typeof entry.import === "string"
        ? entry.import
        : entry.import?.default;
  if (!target) throw new Error("tsx does not export ./esm/api");
  return join(dirname(pkgPath), target);
}

/**
 * From compiled JavaScript the worker is worker.js beside this file. From TypeScript sources (tsx, vitest)
 * the worker first registers tsx's loader, then imports worker.ts.
 */
function createWorker(): Worker {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return new Worker(new URL("./worker.js", here));
  const tsxApi = pathToFileURL(tsxEsmApi(here)).href;
  const entry = new URL("./worker.ts", here).href;
  const boot = `
    const { workerData } = require("node:worker_threads");
    import(workerData.tsxApi)
      .then((m) => { (m.register ?? m.default.register)(); return import(workerData.entry); })
      .catch((e) => { console.error("emulator: the query worker could not start:", e); process.exit(1); });
  `;
  return new Worker(boot, { eval: true, workerData: { tsxApi, entry } });
}
