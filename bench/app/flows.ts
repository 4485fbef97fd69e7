/**
 * Phase 4, the app end to end, measured from outside the dev host as a client sees it: N PUTs sent at once over
 * HTTP, then the operation URLs they answered with are read at a bounded rate until every operation has ended.
 * The figures come from the operation documents (startTime = accepted, endTime = Succeeded, both stamped by the
 * host), so how often the bench reads changes only when it learns the outcome; the reads it made are counted.
 */
import { Agent as HttpAgent } from "node:http";
import { meterDelta } from "@cosmos-feed/emulator";
import { type HttpAnswer, httpCall } from "../lib/http-call.js";
import { percentile, round1, round2 } from "../lib/stats.js";
import { CpuSampler, type CpuWindow } from "./cpu.js";
import { config, type HostStack, RESOURCE_BODY } from "./setup.js";

/** What the operation URL answers (the fields the bench reads). */
interface OperationView {
  status: string;
  startTime: string;
  endTime?: string;
  observed?: { at: string };
}

const ENDED = new Set(["Succeeded", "Failed", "Canceled"]);

/** How the bench learns outcomes: `paced` is the measurement; `every20ms` reproduces the old bench's polling. */
export type PollPolicy =
  | { kind: "paced"; readsPerSecond: number; minIntervalPerOperationMs: number }
  | { kind: "every20ms" }
  | { kind: "none" };

interface Tracked {
  url: string;
  lastReadAt: number;
  ended?: OperationView;
}

export interface StormResult {
  size: number;
  /** PUT answers: 201/200 accepted, anything else counted apart. */
  accepted: number;
  otherStatuses: Record<string, number>;
  /** N ÷ (last PUT answer − first PUT sent). */
  putAnswersPerSecond: number;
  putP50Ms: number;
  putP95Ms: number;
  /** Operations that ended Succeeded (of `accepted`); null when the storm does not follow them (the ceiling). */
  succeeded: number | null;
  /** N ÷ (last operation's endTime − first PUT sent), in flows per second. */
  flowsPerSecond: number | null;
  /** N ÷ (last endTime − the trigger's first `observed.at`): the rate once the change feed delivered the writes. */
  flowsPerSecondAfterTrigger: number | null;
  /** Per operation: endTime − startTime (accepted → Succeeded), ms. */
  acceptedToSucceededP50Ms: number | null;
  acceptedToSucceededP95Ms: number | null;
  acceptedToSucceededMaxMs: number | null;
  /** Per operation: endTime − observed.at (the reactions trigger started the orchestration → Succeeded), ms. */
  orchestrationP50Ms: number | null;
  /**
   * Per operation: observed.at − startTime, accepted → the reactions trigger recorded it (the change feed poll,
   * then the trigger working through the batch, one orchestration start after another), ms.
   */
  acceptedToTriggerP50Ms: number | null;
  /** GET /operations/{id} the bench made to learn the outcomes, and their rate over the storm. */
  statusReads: number;
  statusReadsPerFlow: number;
  statusReadsPerSecond: number;
  /** How long after the last endTime the bench learned it (the price of a modest poll; not in the figures). */
  learnedAfterLastEndMs: number | null;
  /** Wall time of the storm, first PUT sent → last outcome learned (ms). */
  wallMs: number;
  /**
   * CPU used by each process (ms) from just before the first PUT to the first sample after the last endTime (the
   * flows' work, with the bench's reads until then; the ceiling: to the last PUT answer); its cores (CPU ÷ wall)
   * and per accepted PUT.
   */
  cpu: CpuWindow & {
    hostCores: number | null;
    emulatorCores: number;
    hostMsPerFlow: number | null;
    /** The dev host's process alone and its app's worker process: CPU ms per flow each. */
    hostProcessMsPerFlow: number | null;
    workerMsPerFlow: number | null;
  };
  /** Cosmos DB requests and RU the storm cost, per accepted PUT, by container (emulator meter). */
  cosmosPerFlow: Record<string, { requests: number; ru: number }>;
  /** Requests the emulator refused with 429 during the storm (the SDK retried them), in all, by container. */
  throttledByContainer: Record<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Call = (method: string, url: string, body?: unknown) => Promise<HttpAnswer>;

/** Reads operation URLs under `policy` until every one has ended; returns how many reads it made. */
async function learnOutcomes(
  call: Call,
  ops: Tracked[],
  policy: PollPolicy,
  deadline: number,
): Promise<number> {
  let reads = 0;
  let inFlight = 0;
  const read = async (op: Tracked) => {
    reads++;
    inFlight++;
    try {
      // A GET is safe to repeat: once, when the connection was reset (a keep-alive socket the host closed for
      // idleness just as the read went out on it, which a host stalled by the storm makes likelier). Counted.
      const res = await call("GET", op.url).catch((e: unknown) => {
        if (!/ECONNRESET|socket hang up/.test((e as Error).message)) throw e;
        reads++;
        return call("GET", op.url);
      });
      if (res.status !== 200) throw new Error(`GET ${op.url}: ${res.status} ${res.text}`);
      const view = JSON.parse(res.text) as OperationView;
      if (ENDED.has(view.status)) op.ended = view;
    } finally {
      inFlight--;
    }
  };
  const pending = () => ops.filter((o) => !o.ended);
  const timeout = () => new Error(`timed out: ${pending().length} of ${ops.length} operations not ended`);
  if (policy.kind === "every20ms") {
    // The old bench: one loop per operation, read → sleep 20 ms → read … until it ends.
    await Promise.all(
      ops.map(async (op) => {
        while (!op.ended) {
          if (Date.now() > deadline) throw timeout();
          await read(op);
          if (!op.ended) await sleep(config.oldPollIntervalMs);
        }
      }),
    );
    return reads;
  }
  if (policy.kind === "none") return 0;
  // Paced: one read every 1000/readsPerSecond ms at most, to the pending operation read least recently, if it was
  // read at least minIntervalPerOperationMs ago.
  const gapMs = 1000 / policy.readsPerSecond;
  let failure: unknown;
  while (pending().length > 0 || inFlight > 0) {
    if (failure) throw failure;
    if (Date.now() > deadline) throw timeout();
    const now = Date.now();
    const next = pending()
      .filter((o) => now - o.lastReadAt >= policy.minIntervalPerOperationMs)
      .sort((a, b) => a.lastReadAt - b.lastReadAt)[0];
    if (next) {
      next.lastReadAt = now;
      read(next).catch((e: unknown) => {
        failure = e;
      });
    }
    await sleep(gapMs);
  }
  if (failure) throw failure;
  return reads;
}

/**
 * One storm on `stack`: `size` PUTs at once (each its own subscription, so the subscription lock never refuses one),
 * then the outcomes learned under `policy` (`none`: the PUTs alone).
 */
export async function storm(
  stack: HostStack,
  size: number,
  tag: string,
  policy: PollPolicy,
): Promise<StormRun> {
  const meterBefore = (await stack.emulator.stats()).meter;
  const sampler = new CpuSampler(stack);
  await sampler.start();
  // Sockets of its own: N fresh connections, as N clients would open, and none left idle by an earlier storm (the
  // host closes idle keep-alive sockets after 5 s; a request racing that close would fail).
  const agent = new HttpAgent({ keepAlive: true, maxSockets: Math.max(size, 16) });
  const call: Call = (method, url, body) => {
    const sent = Date.now();
    return httpCall(agent, method, url, body).catch((e: unknown) => {
      throw new Error(`${method} ${url} failed after ${Date.now() - sent} ms: ${(e as Error).message}`);
    });
  };
  const ops: Tracked[] = [];
  const putMs: number[] = [];
  const otherStatuses: Record<string, number> = {};
  let lastAnswer = 0;
  let firstRefusal: string | undefined;
  const firstSent = Date.now();
  const deadline = firstSent + config.stormTimeoutMs;
  await Promise.all(
    Array.from({ length: size }, async (_v, i) => {
      const res = await call("PUT", `${stack.url}/api/subscriptions/${tag}-${i}/resources/r`, RESOURCE_BODY);
      lastAnswer = Math.max(lastAnswer, Date.now());
      putMs.push(res.ms);
      const opUrl = res.headers["azure-asyncoperation"];
      if ((res.status === 201 || res.status === 200) && typeof opUrl === "string")
        ops.push({ url: opUrl, lastReadAt: 0 });
      else {
        otherStatuses[res.status] = (otherStatuses[res.status] ?? 0) + 1;
        firstRefusal ??= `${res.status} ${res.text}`;
      }
    }),
  );
  // Every PUT goes to a subscription of its own: a refusal is a broken bench or app, not a figure.
  if (firstRefusal)
    throw new Error(`${stack.name}: ${size - ops.length} of ${size} PUTs refused, e.g. ${firstRefusal}`);
  // Outcomes are learned once every PUT has answered (as the old bench did): the PUT answers are not slowed by
  // the storm's own reads.
  const reads = await learnOutcomes(call, ops, policy, deadline).finally(() => agent.destroy());
  const learnedAt = Date.now();
  await sampler.stop();
  const stats = await stack.emulator.stats();
  const ended = ops.map((o) => o.ended).filter((v): v is OperationView => v !== undefined);
  const endOf = (v: OperationView) => Date.parse(v.endTime ?? v.startTime);
  const lastEnd = ended.length ? Math.max(...ended.map(endOf)) : lastAnswer;
  const window = sampler.window(lastEnd);
  const cpu = {
    ...window,
    hostCores: window.host === null ? null : round2(window.host / Math.max(1, window.windowMs)),
    emulatorCores: round2(window.emulator / Math.max(1, window.windowMs)),
    hostMsPerFlow: window.host === null ? null : round1(window.host / Math.max(1, ops.length)),
    hostProcessMsPerFlow:
      window.hostProcess === null ? null : round1(window.hostProcess / Math.max(1, ops.length)),
    workerMsPerFlow: window.worker === null ? null : round1(window.worker / Math.max(1, ops.length)),
  };
  const cosmosPerFlow: StormResult["cosmosPerFlow"] = {};
  for (const container of Object.keys(stats.meter)) {
    const delta = Object.values(meterDelta(meterBefore, stats.meter, container));
    const requests = delta.reduce((a, e) => a + (e?.count ?? 0), 0);
    if (requests === 0) continue;
    const ru = delta.reduce((a, e) => a + (e?.ru ?? 0), 0);
    cosmosPerFlow[container.replace(/^cosmos-feed-app\//, "")] = {
      requests: round1(requests / Math.max(1, ops.length)),
      ru: round1(ru / Math.max(1, ops.length)),
    };
  }
  const throttledByContainer: Record<string, number> = {};
  for (const [container, kinds] of Object.entries(stats.meter)) {
    let n = 0;
    for (const [kind, e] of Object.entries(kinds))
      n += e.throttled - (meterBefore[container]?.[kind]?.throttled ?? 0);
    if (n > 0) throttledByContainer[container.replace(/^cosmos-feed-app\//, "")] = n;
  }
  const putWindowS = Math.max(1, lastAnswer - firstSent) / 1000;
  const base = {
    size,
    accepted: ops.length,
    otherStatuses,
    putAnswersPerSecond: round1(size / putWindowS),
    putP50Ms: round1(percentile(putMs, 50)),
    putP95Ms: round1(percentile(putMs, 95)),
    statusReads: reads,
    statusReadsPerFlow: round2(reads / Math.max(1, ops.length)),
    wallMs: learnedAt - firstSent,
    statusReadsPerSecond: round1(reads / Math.max(0.001, (learnedAt - firstSent) / 1000)),
    cpu,
    cosmosPerFlow,
    throttledByContainer,
  };
  if (policy.kind === "none")
    return {
      result: {
        ...base,
        succeeded: null,
        flowsPerSecond: null,
        flowsPerSecondAfterTrigger: null,
        acceptedToSucceededP50Ms: null,
        acceptedToSucceededP95Ms: null,
        acceptedToSucceededMaxMs: null,
        orchestrationP50Ms: null,
        acceptedToTriggerP50Ms: null,
        learnedAfterLastEndMs: null,
      },
      samples: { acceptedToSucceededMs: [], orchestrationMs: [], acceptedToTriggerMs: [] },
    };
  const total = ended.map((v) => endOf(v) - Date.parse(v.startTime));
  const orchestration = ended
    .filter((v) => v.observed)
    .map((v) => endOf(v) - Date.parse(v.observed?.at ?? ""));
  const toTrigger = ended
    .filter((v) => v.observed)
    .map((v) => Date.parse(v.observed?.at ?? "") - Date.parse(v.startTime));
  const firstObserved = Math.min(...ended.map((v) => Date.parse(v.observed?.at ?? v.startTime)));
  return {
    result: {
      ...base,
      succeeded: ended.filter((v) => v.status === "Succeeded").length,
      flowsPerSecond: round1(size / (Math.max(1, lastEnd - firstSent) / 1000)),
      flowsPerSecondAfterTrigger: round1(size / (Math.max(1, lastEnd - firstObserved) / 1000)),
      acceptedToSucceededP50Ms: percentile(total, 50),
      acceptedToSucceededP95Ms: percentile(total, 95),
      acceptedToSucceededMaxMs: Math.max(...total),
      orchestrationP50Ms: percentile(orchestration, 50),
      acceptedToTriggerP50Ms: percentile(toTrigger, 50),
      learnedAfterLastEndMs: learnedAt - lastEnd,
    },
    samples: { acceptedToSucceededMs: total, orchestrationMs: orchestration, acceptedToTriggerMs: toTrigger },
  };
}

/** A storm's figures, and its per-operation samples (ms) for percentiles pooled over storms (not written out). */
export interface StormRun {
  result: StormResult;
  samples: { acceptedToSucceededMs: number[]; orchestrationMs: number[]; acceptedToTriggerMs: number[] };
}

/** The measurement's poll: config.statusReadsPerSecond in all, each operation at most every statusReadMinIntervalMs. */
export const PACED: PollPolicy = {
  kind: "paced",
  readsPerSecond: config.statusReadsPerSecond,
  minIntervalPerOperationMs: config.statusReadMinIntervalMs,
};
