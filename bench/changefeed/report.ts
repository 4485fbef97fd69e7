/** Change feed bench: conclusions computed from the measurements, and the method text of the JSON. */

import os from "node:os";
import { ChangeFeedDefaults } from "@cosmos-feed/changefeed/options";
import { git } from "../lib/git.js";
import { round2, scaled } from "./setup.js";
import type { DrainSummary } from "./throughput.js";

// ---------------------------------------------------------------------------------------------------

/** Conclusions, each computed from this run's numbers (no fixed claims). */
export function notesFor(
  bySize: {
    maxItemCount: number;
    bare: { docsPerSec: number; clientCpuUsPerDoc: number };
    bareParallel: { docsPerSec: number; clientCpuUsPerDoc: number };
    processor: DrainSummary;
    processorPerPage: DrainSummary;
    pairedOverheadPct: number;
    pairedOverheadVsBareParallelPct: number;
    perPagePairedOverheadVsBareParallelPct: number;
  }[],
  latency: { feedPollDelay: number; p50Ms: number; p99Ms: number }[],
  load: number,
  goalPct: number,
): string[] {
  const notes: string[] = [];
  const slower = (pct: number) => (pct > 0 ? `${pct} % slower` : `${-pct} % faster`);
  for (const s of bySize) {
    const replaces = (x: DrainSummary) => x.requestsPerRun.leases.replace ?? 0;
    notes.push(
      `maxItemCount ${s.maxItemCount}: the processor (default checkpointing) is ${slower(s.pairedOverheadVsBareParallelPct)} ` +
        `than one iterator per range without leases (bareParallel, paired median), ${s.pairedOverheadVsBareParallelPct <= goalPct ? "within" : "over"} ` +
        `the ${goalPct} % goal, and ${slower(s.pairedOverheadPct)} than one bare iterator. With one checkpoint per page ` +
        `(maxCheckpointDelay 0) it is ${slower(s.perPagePairedOverheadVsBareParallelPct)} than bareParallel. Lease replaces ` +
        `per run: ${replaces(s.processor)} for ${s.processor.pages} pages (default) vs ${replaces(s.processorPerPage)} for ` +
        `${s.processorPerPage.pages} pages (per page); client CPU per document ${s.processor.clientCpuUsPerDoc} µs vs ` +
        `${s.processorPerPage.clientCpuUsPerDoc} (per page) and ${s.bareParallel.clientCpuUsPerDoc} (bareParallel).`,
    );
  }
  for (const l of latency) {
    notes.push(
      `feedPollDelay ${l.feedPollDelay} ms: p50 ${l.p50Ms} ms = ${round2(l.p50Ms / l.feedPollDelay)} × feedPollDelay, ` +
        `p99 ${l.p99Ms} ms = ${round2(l.p99Ms / l.feedPollDelay)} × feedPollDelay.`,
    );
  }
  notes.push(
    `1-minute load average at the start: ${load} on ${os.cpus().length} cores` +
      (load > 1 ? " (other processes shared the machine: prefer the paired overheads)." : "."),
  );
  return notes;
}

export const FAILOVER_FORMULA =
  ".NET: a crashed host's lease is re-taken between expiration and expiration + acquire after its LAST WRITE " +
  `(${scaled.leaseExpirationInterval}…${scaled.leaseExpirationInterval + scaled.leaseAcquireInterval} ms here; ` +
  `${ChangeFeedDefaults.leaseExpirationInterval}…${ChangeFeedDefaults.leaseExpirationInterval + ChangeFeedDefaults.leaseAcquireInterval} ms ` +
  "at the defaults). Measured from the kill it is (expiration − age of the lease's last write) … + acquire. Under " +
  `load a lease is checkpointed at least every maxCheckpointDelay (${ChangeFeedDefaults.maxCheckpointDelay} ms), so the age is at most that and the takeover is about expiration … expiration + acquire after the ` +
  "kill (what this bench measures: a writer is running). On an idle feed .NET's age is 0…renew (43–73 s after " +
  "the kill at the defaults); ours rewrites an idle lease only when < 2 renew intervals remain before expiry, so " +
  "the age can reach expiration − renew and the takeover is renew … expiration + acquire after the kill " +
  `(${ChangeFeedDefaults.leaseRenewInterval / 1000}–${(ChangeFeedDefaults.leaseExpirationInterval + ChangeFeedDefaults.leaseAcquireInterval) / 1000} s at the defaults).`;

export const METHOD = {
  process:
    "The emulator runs in its own child process (bench/changefeed.child.ts emulator: in memory, HTTP on " +
    "127.0.0.1, enforceThroughput false, containers created with the x-ms-emulator-partition-count header " +
    "and no throughput, so nothing is throttled). Phases 1, 2 and 5 run the SDK clients and processors in the " +
    "bench process; phases 3 and 4 run each processor host in its own child process (bench/changefeed.child.ts " +
    "host) with its own CosmosClient.",
  throughput:
    "The same pre-written documents (transactional batches, ~1 KB, 512 partition key values over 8 ranges) are " +
    "drained from the beginning by (a) bare: ONE container.items.getChangeFeedIterator({changeFeedStartFrom: " +
    "ChangeFeedStartFrom.Beginning(), maxItemCount}) with readNext() until every document was seen; (b) " +
    "bareParallel (diagnostic): one such iterator per feed range (ChangeFeedStartFrom.Beginning(range)), all 8 " +
    "concurrently, no leases — the processor's read pattern without its lease work; (c) processor: 1 host, a " +
    "fresh lease container per run (bootstrap, 8 lease creates and acquires included), startFromBeginning, " +
    "maxItemsPerInvocation = maxItemCount, handler only counting; (d) processorPerPage: the same with " +
    "maxCheckpointDelay 0 (one checkpoint per page). A fresh CosmosClient per run. Timer: iterator " +
    "creation / processor.start() → last document counted. One unrecorded warm-up of each, then `rounds` rounds " +
    "per maxItemCount with the order rotating; medians reported. overheadPct = (bare − processor) / bare of the " +
    "medians; pairedOverheadPct = median of the same ratio taken per round (back-to-back runs).",
  latency:
    "1 host in the bench process (start 'now'), idle and polling, then a writer (own client) creates " +
    "`ratePerSec` documents/s for `seconds` s with writtenAt = Date.now() at issue; the handler records " +
    "Date.now() − writtenAt per document.",
  handover:
    "2 host processes (A started first and owning all 8 leases, then B, which steals until 4/4). A writer writes " +
    "100 docs/s; then A gets SIGKILL (failover) or SIGTERM → processor.stop() (handoff: releases its leases and " +
    "keeps processing them until B takes them, handoffTimeout = acquire + 2 s by default). The lease container is " +
    "polled every ~50 ms until B owns all 8. Worst latency = max over documents written from 1 s before the " +
    "event to 1 s after B owned all, of (first time any host handled it − writtenAt). Hosts report each batch " +
    "to the bench over IPC before their handler returns (so before the checkpoint).",
  idle:
    "4 processors in the bench process (a CosmosClient each), 32-range monitored container receiving no writes. " +
    "After they balance (8 each) and settle for one expiration interval, lease-container requests are counted " +
    "over the window by the emulator's RU meter (every request kind on db/<leases>, incl. the SDK's query-plan " +
    "requests, metered as 'metadata'), by the emulator's HTTP request counter, and by processor.counters (logical " +
    "operations: one per query page / read / replace). Per hour = count × 3600 / window / scale: all lease " +
    "intervals are the defaults ÷ scale, so every count scales by exactly that factor (feedPollDelay does not " +
    "touch the lease container). .NET analytic (change-feed-leases.md §4.4, §4.7, §7.1): per host 1 all-leases " +
    "query per acquire interval, per lease 1 read + 1 replace per renew interval.",
};

export { git };
