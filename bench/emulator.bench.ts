/**
 * Emulator benchmark: point writes and point reads per second through the unmodified @azure/cosmos SDK,
 * against our emulator and @vercel/cosmosdb-server side by side in the same run, plus our change-feed
 * drain rate and a CPU profile of our server. Writes bench/results/emulator.json.
 *
 *   npx tsx bench/emulator.bench.ts          (or: npm run bench:emulator)
 *
 * Each server runs in its own child process (bench/emulator.server.ts); the SDK load generator runs here.
 * Both servers stay up and the load alternates between them in short slices (ours, vercel, vercel, ours,
 * …), so that noise from other processes on this shared machine hits both sides alike; the summary is
 * the median over slices, the ratio the median of the per-pair ratios.
 * Knobs (environment): BENCH_PAIRS (8), BENCH_SLICE_S (2), BENCH_WARMUP_S (3), BENCH_CONCURRENCY (32),
 * BENCH_CF_DOCS (20000), BENCH_PROFILE_S (4), BENCH_QUIET_WAIT_S (20). See docs/bench-emulator.md.
 *
 * This file runs the measurements and writes the JSON; the parts are in bench/emulator/ (setup.ts: config,
 * server child processes, quiet-machine wait; workload.ts: interleaved slices and summaries; profile.ts:
 * server CPU profile and change feed drain).
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { relative } from "node:path";
import { profileAndChangeFeed } from "./emulator/profile.js";
import {
  awaitQuietMachine,
  config,
  PROFILE_FILE,
  RESULTS_DIR,
  RESULTS_FILE,
  ROOT,
  round2,
} from "./emulator/setup.js";
import { benchBoth, KINDS, makeDoc, summarizeSlices, vercelDefaultClientProbe } from "./emulator/workload.js";
import type { ServerKind } from "./emulator.server.js";
import { machineFacts, median, packageVersion } from "./lib/stats.js";

// ---------------------------------------------------------------------------------------------------

type Measured = Awaited<ReturnType<typeof benchBoth>>;

const slicesOf = (m: Measured) => KINDS.flatMap((k) => [...m.writes[k], ...m.reads[k]]);

/** Requests per operation (all routes) of every measured slice, both servers, writes and reads. */
function allRequestsPerOp(m: Measured): number[] {
  return slicesOf(m).map((s) => round2(s.serverWindow.requests / Math.max(1, s.serverWindow.ops)));
}

/**
 * One request per operation, up to the edges: an operation started just before the server's window may send its
 * request inside it, so a slice agrees when requests and operations differ by at most the operations in flight.
 */
function countersAgree(m: Measured): boolean {
  return slicesOf(m).every(
    (s) => Math.abs(s.serverWindow.requests - s.serverWindow.ops) <= config.concurrency,
  );
}

/** The largest lag of a server's window behind the client's asks, ms. */
function maxLagMs(m: Measured): number {
  return Math.max(
    ...KINDS.flatMap((k) => [...m.writes[k], ...m.reads[k]]).map((s) =>
      Math.max(s.serverWindow.lagStartMs, s.serverWindow.lagEndMs),
    ),
  );
}

async function main(): Promise<void> {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const began = Date.now();
  const machine = {
    ...machineFacts(ROOT),
    vercelCosmosdbServer: packageVersion(ROOT, "@vercel/cosmosdb-server"),
  };
  const docBytes = Buffer.byteLength(JSON.stringify(makeDoc("w0-0", 0)));
  console.log(
    `emulator bench: ours vs vercel, C=${config.concurrency}, ${config.pairs} pairs of ` +
      `${config.sliceWarmupSeconds}+${config.sliceSeconds}s slices per operation, doc ${docBytes} B`,
  );
  const quietAtStart = await awaitQuietMachine();
  const main = await benchBoth();

  console.log("profiling our server and measuring the change feed drain…");
  const extra = await profileAndChangeFeed();
  console.log("probing vercel with the default connection policy…");
  const trap = await vercelDefaultClientProbe();

  const summarize = (kind: ServerKind) => ({
    writes: summarizeSlices(main.writes[kind]),
    reads: summarizeSlices(main.reads[kind]),
    memory: main.after[kind],
  });
  const ours = summarize("ours");
  const vercel = summarize("vercel");
  const pairRatios = (op: "writes" | "reads"): number[] =>
    main[op].ours.map((o, i) => round2(o.opsPerSec / Math.max(1, main[op].vercel[i].opsPerSec)));
  const ratios = {
    /** ours / vercel end-to-end SDK throughput: median of the per-pair ratios. */
    writes: round2(median(pairRatios("writes"))),
    reads: round2(median(pairRatios("reads"))),
    goal: 3,
    writesPerPair: pairRatios("writes"),
    readsPerPair: pairRatios("reads"),
    /** ours / vercel of the median ops/s (for comparison with the pairwise figure). */
    writesOfMedians: round2(ours.writes.opsPerSec / vercel.writes.opsPerSec),
    readsOfMedians: round2(ours.reads.opsPerSec / vercel.reads.opsPerSec),
    /** vercel / ours server CPU per operation: how many times cheaper each operation is on our server. */
    serverCpuPerOpWrites: round2(vercel.writes.serverCpuUsPerOp / ours.writes.serverCpuUsPerOp),
    serverCpuPerOpReads: round2(vercel.reads.serverCpuUsPerOp / ours.reads.serverCpuUsPerOp),
    /** ours / vercel live memory per document (heap + external after full GCs): above 1, ours holds more. */
    memoryPerDoc: round2(ours.memory.bytesPerDoc / Math.max(1, vercel.memory.bytesPerDoc)),
  };
  // Each point operation is one HTTP request with discovery off: the counters are only trusted if they say so.
  const requestsPerOp = allRequestsPerOp(main);
  const agree = countersAgree(main);
  const allSlices = KINDS.flatMap((k) => [...main.writes[k], ...main.reads[k]]);
  const clientCores = allSlices.map((r) => r.clientCpuCores);
  const maxServerCores = Math.max(...allSlices.map((r) => r.serverCpuCores));
  const otherCores = allSlices.map((r) => r.otherCpuCores);
  const maxOtherCores = Math.max(...otherCores);
  const noisySlices = otherCores.filter((c) => c > 0.25).length;

  const output = {
    machine,
    config: {
      ...config,
      docBytes,
      durationSeconds: 0,
      client:
        "@azure/cosmos in the bench process; one CosmosClient per server with connectionPolicy " +
        "{enableEndpointDiscovery:false}; `concurrency` async loops of container.items.create(doc) " +
        "(unique ids), then container.item(id, pk).read() of random documents written before.",
      servers: {
        ours:
          "startEmulator({port:0, host:'127.0.0.1'}) in its own `node --import tsx` child: HTTP, in memory, " +
          "key auth verified, no provisioned throughput (no 429s), one partition key range, path /pk.",
        vercel:
          "@vercel/cosmosdb-server createHttpServer({keepAlive:true}) listening on 127.0.0.1 in its own " +
          "child: HTTP, in memory, container path /pk. keepAlive:true, or it answers `connection: close`.",
      },
      method:
        "Both server children stay up; after an unrecorded warm-up each, the load alternates between them " +
        "in slices (pair k: ours then vercel, or vercel then ours for odd k), each slice = ramp-up not " +
        "recorded, then completions inside the measured window counted with their latency. Summary = " +
        "median over slices (ops/s, p50, p99, CPU/op); ratio = median of per-pair ratios.",
      quietAtStart,
    },
    ours: { ...ours, changeFeedDrain: extra.changeFeedDrain },
    vercel: { ...vercel, defaultClientProbe: trap },
    ratios,
    /** Whether the server-side counters saw one HTTP request per operation in every slice (they must). */
    serverCounters: {
      requestsPerOpMin: Math.min(...requestsPerOp),
      requestsPerOpMax: Math.max(...requestsPerOp),
      tolerance:
        "requests − operations within ± concurrency (in flight at the window's edges) in every slice",
      agree,
      maxLagMs: maxLagMs(main),
    },
    serverProfile: {
      what:
        `Our server child, sampled by node:inspector every ${config.profileSamplingIntervalUs} µs over ` +
        `${config.profileSeconds}s of writes + ${config.profileSeconds}s of reads (separate run, C=${config.concurrency}). ` +
        "Self time aggregated by function + file:line (mapped back to the .ts source through tsx source maps).",
      run: extra.profiledRun,
      durationMs: extra.profile.durationMs,
      samples: extra.profile.samples,
      idlePct: extra.profile.idlePct,
      byFile: extra.profile.topFiles,
      rawProfile: relative(ROOT, PROFILE_FILE),
    },
    serverProfileTop: extra.profile.topFunctions,
    notes: [
      "Both servers are plain HTTP on 127.0.0.1, each in its own process; the SDK load generator runs in the bench process. " +
        "The machine has " +
        `${machine.cpuCount} cores, so client and server each get about one core.`,
      "vercel's account id trap: bound to 127.0.0.1 its account id is '127.0.0.1' (not 'localhost'), so the SDK " +
        "honours its location lists; but those hard-code https://127.0.0.1:<port>/, and against its HTTP server " +
        `the SDK then fails (vercel.defaultClientProbe.boundTo127: ${trap.boundTo127.ok ? "unexpectedly worked" : trap.boundTo127.error}). ` +
        "So both clients run with enableEndpointDiscovery:false, which sends every request to the given " +
        "endpoint: requestsPerOp shows one HTTP request per SDK operation and no GET / on either side. " +
        "Bound to 0.0.0.0 (id 'localhost') with the default policy vercel works but gets " +
        `${trap.boundTo0000.reads.requestsPerOp["GET /"] ?? 0} GET / per point read and ` +
        `${trap.boundTo0000.writes.requestsPerOp["GET /"] ?? 0} per write (${trap.boundTo0000.reads.opsPerSec} reads/s, ` +
        `${trap.boundTo0000.writes.opsPerSec} writes/s in the short probe).`,
      maxOtherCores > 0.25
        ? `Shared machine: other processes used more than 0.25 cores in ${noisySlices} of ${allSlices.length} ` +
          `measured slices (up to ${maxOtherCores}; otherCpuCores per slice). Interleaving spreads that ` +
          "noise over both sides; absolute ops/s are lower than on an idle machine."
        : `The machine was otherwise quiet (other processes ≤ ${maxOtherCores} cores in every slice).`,
      "vercel's change feed is fake (returns everything every time, etag 1), so the change feed drain rate is ours alone.",
      (() => {
        const cpu = (x: typeof ours) =>
          `${x.writes.clientCpuUsPerOp}/${x.reads.clientCpuUsPerOp} µs client, ${x.writes.serverCpuUsPerOp}/${x.reads.serverCpuUsPerOp} µs server`;
        const clientBound = [ours, vercel].every(
          (x) =>
            x.writes.clientCpuUsPerOp > x.writes.serverCpuUsPerOp &&
            x.reads.clientCpuUsPerOp > x.reads.serverCpuUsPerOp,
        );
        return (
          `CPU per operation (writes/reads): against ours ${cpu(ours)}; against vercel ${cpu(vercel)}. ` +
          `The client process used ${Math.min(...clientCores)}–${Math.max(...clientCores)} cores, no server more than ` +
          `${maxServerCores}. ` +
          (clientBound
            ? "The SDK client spent more CPU per operation than either server, so end-to-end ops/s are bounded by " +
              "the one client process; serverCpuUsPerOp and serverCoreCapacityOpsPerSec compare the servers themselves."
            : "A server spent at least as much CPU per operation as the client on some operation, so end-to-end " +
              "ops/s there reflect the servers' own cost.")
        );
      })(),
      agree
        ? `Server-side counters: ${Math.min(...requestsPerOp)}–${Math.max(...requestsPerOp)} HTTP requests per ` +
          "operation in every slice on both servers (one expected, give or take the operations in flight at a window's " +
          "edges), counted over the server's own window (the " +
          "moments the child took its figures, which lag the client's asks by up to " +
          `${maxLagMs(main)} ms under load), so server CPU per operation is per real operation.`
        : `Server-side counters disagree with the client: ${Math.min(...requestsPerOp)}–${Math.max(...requestsPerOp)} ` +
          "requests per operation (one expected, give or take the operations in flight at a window's edges): " +
          "serverCpuUsPerOp is NOT per operation in this run.",
      `Memory per document (heap + external after full GCs, minus the same before any write): ours ` +
        `${ours.memory.bytesPerDoc} B, vercel ${vercel.memory.bytesPerDoc} B for ${docBytes} B documents ` +
        `(${ratios.memoryPerDoc}× vercel's; RSS ${ours.memory.serverRssMb} vs ${vercel.memory.serverRssMb} MB, which also ` +
        "counts the runtime, free heap pages and allocator slack).",
      "Server CPU includes the bench's own per-request counter (a diagnostics_channel subscriber) and the " +
        "kernel's socket time; both sides pay the same. Ours verifies " +
        "every request's HMAC signature and meters RUs; vercel checks no signature.",
    ],
  };
  output.config.durationSeconds = Math.round((Date.now() - began) / 1000);
  writeFileSync(RESULTS_FILE, `${JSON.stringify(output, null, 2)}\n`);

  console.log(
    `\nours   writes ${ours.writes.opsPerSec}/s reads ${ours.reads.opsPerSec}/s, change feed ${extra.changeFeedDrain.docsPerSec} docs/s`,
  );
  console.log(`vercel writes ${vercel.writes.opsPerSec}/s reads ${vercel.reads.opsPerSec}/s`);
  console.log(`ratio  writes ${ratios.writes}× reads ${ratios.reads}× (goal ≥ ${ratios.goal}×)`);
  console.log(
    `server CPU/op: ours writes ${ours.writes.serverCpuUsPerOp} µs reads ${ours.reads.serverCpuUsPerOp} µs; ` +
      `vercel writes ${vercel.writes.serverCpuUsPerOp} µs reads ${vercel.reads.serverCpuUsPerOp} µs; ` +
      `SDK client ≈ ${ours.writes.clientCpuUsPerOp}/${ours.reads.clientCpuUsPerOp} µs`,
  );
  console.log(
    `memory per document: ours ${ours.memory.bytesPerDoc} B, vercel ${vercel.memory.bytesPerDoc} B ` +
      `(${ratios.memoryPerDoc}×); requests per operation ${Math.min(...requestsPerOp)}–${Math.max(...requestsPerOp)}`,
  );
  console.log("server profile (self time, % of busy samples):");
  for (const e of extra.profile.topFunctions.slice(0, 10)) {
    console.log(`  ${String(e.pctOfBusy).padStart(5)}%  ${e.function}  ${e.location}`);
  }
  console.log(`wrote ${relative(ROOT, RESULTS_FILE)} in ${output.config.durationSeconds}s`);
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
