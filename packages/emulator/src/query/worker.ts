import { parentPort } from "node:worker_threads";
import { compileQuery } from "./compile.js";
import { executeQuery } from "./evaluate.js";
import { type QueryJob, type QueryJobResult, WORKER_MAX_ROWS } from "./jobs.js";

/** Runs queries off the server's event loop (see pool.ts): documents arrive as JSON, rows leave as JSON. */
parentPort?.on("message", (job: QueryJob) => {
  let reply: QueryJobResult;
  try {
    const docs = job.docs.map((d) => JSON.parse(d) as unknown);
    const started = performance.now();
    const { rows, sources } = executeQuery(compileQuery(job.text), docs, {
      parameters: new Map(job.parameters.map((p) => [p.name, p.value])),
      compositeIndexes: job.compositeIndexes,
      maxRows: WORKER_MAX_ROWS,
      tieGroups: job.tieGroups,
    });
    reply = {
      id: job.id,
      rows: rows.map((r) => JSON.stringify(r)),
      sources,
      executionMs: performance.now() - started,
    };
  } catch (e) {
    const err = e as { message?: string; code?: string; start?: number; end?: number; name?: string };
    reply = {
      id: job.id,
      error: {
        name: err.name ?? "Error",
        message: err.message ?? String(e),
        code: err.code,
        start: err.start,
        end: err.end,
      },
    };
  }
  parentPort?.postMessage(reply);
});
