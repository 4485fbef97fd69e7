/** Emulator bench: a CPU profile of our server and the change feed drain. */

import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ChangeFeedStartFrom, type Container, StatusCodes } from "@azure/cosmos";
import { median } from "../lib/stats.js";
import {
  awaitQuietMachine,
  config,
  PROFILE_FILE,
  ROOT,
  round1,
  round2,
  round3,
  ServerProcess,
} from "./setup.js";
import { type BenchDoc, makeDoc, newClient, runPhase, setupContainer } from "./workload.js";

export interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: CpuProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileEntry {
  function: string;
  location: string;
  selfMs: number;
  pctOfSamples: number;
  pctOfBusy: number;
}

export const IDLE_FRAMES = new Set(["(idle)", "(root)"]);

export function shortUrl(url: string): string {
  if (url === "") return "";
  const path = url.startsWith("file://") ? fileURLToPath(url) : url;
  if (!path.startsWith("/")) return path; // node:internal/…
  const rel = relative(ROOT, path);
  const nm = rel.lastIndexOf("node_modules/");
  return nm >= 0 ? rel.slice(nm + "node_modules/".length) : rel;
}

/** Self time per function (functionName + url + line), from samples and their time deltas. */
export function summarizeProfile(profile: CpuProfile, top: number) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const counts = new Map<number, number>();
  const { samples, timeDeltas } = profile;
  for (let i = 0; i < samples.length; i++) {
    // timeDeltas[i] is the time before sample i; the time a sample stands for is the gap after it.
    const dt = timeDeltas[i + 1] ?? timeDeltas[i] ?? 0;
    selfUs.set(samples[i], (selfUs.get(samples[i]) ?? 0) + dt);
    counts.set(samples[i], (counts.get(samples[i]) ?? 0) + 1);
  }
  const totalSamples = samples.length;
  let idleSamples = 0;
  const fns = new Map<string, { function: string; location: string; us: number; samples: number }>();
  const files = new Map<string, { us: number; samples: number }>();
  for (const [id, n] of counts) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (IDLE_FRAMES.has(functionName)) {
      idleSamples += n;
      continue;
    }
    const name = functionName || "(anonymous)";
    const file = shortUrl(url);
    const location = file ? `${file}:${lineNumber + 1}` : "";
    const key = `${name} ${location}`;
    const us = selfUs.get(id) ?? 0;
    const e = fns.get(key) ?? { function: name, location, us: 0, samples: 0 };
    e.us += us;
    e.samples += n;
    fns.set(key, e);
    const fileKey = file || name; // (garbage collector), (program)
    const f = files.get(fileKey) ?? { us: 0, samples: 0 };
    f.us += us;
    f.samples += n;
    files.set(fileKey, f);
  }
  const busy = Math.max(1, totalSamples - idleSamples);
  const pct = (n: number, of: number): number => round1((100 * n) / Math.max(1, of));
  const topFunctions: ProfileEntry[] = [...fns.values()]
    .sort((a, b) => b.samples - a.samples)
    .slice(0, top)
    .map((e) => ({
      function: e.function,
      location: e.location,
      selfMs: Math.round(e.us / 1000),
      pctOfSamples: pct(e.samples, totalSamples),
      pctOfBusy: pct(e.samples, busy),
    }));
  const topFiles = [...files.entries()]
    .sort((a, b) => b[1].samples - a[1].samples)
    .slice(0, 12)
    .map(([file, e]) => ({ file, selfMs: Math.round(e.us / 1000), pctOfBusy: pct(e.samples, busy) }));
  return {
    durationMs: Math.round((profile.endTime - profile.startTime) / 1000),
    samples: totalSamples,
    idlePct: pct(idleSamples, totalSamples),
    topFunctions,
    topFiles,
  };
}

export async function profileAndChangeFeed() {
  await awaitQuietMachine();
  const server = await ServerProcess.start("ours");
  try {
    const client = newClient(server.endpoint);
    const container = await setupContainer(client, "items");
    const written: BenchDoc[] = [];
    const seq = new Array<number>(config.concurrency).fill(0);
    const write = async (w: number): Promise<void> => {
      const n = seq[w]++;
      const doc = makeDoc(`p-w${w}-${n}`, n * config.concurrency + w);
      await container.items.create(doc);
      written.push(doc);
    };
    const read = async (): Promise<void> => {
      const doc = written[Math.floor(Math.random() * written.length)];
      await container.item(doc.id, doc.pk).read();
    };
    // Warm up unprofiled (JIT), then profile one write phase and one read phase.
    await runPhase(server, config.concurrency, 0, Math.min(2, config.writeWarmupSeconds), write);
    await server.startProfile();
    const w = await runPhase(server, config.concurrency, 0, config.profileSeconds, write);
    const r = await runPhase(server, config.concurrency, 0, config.profileSeconds, read);
    await server.stopProfile(PROFILE_FILE);
    const profile = JSON.parse(readFileSync(PROFILE_FILE, "utf8")) as CpuProfile;
    const summary = summarizeProfile(profile, 15);

    // Change feed: N documents in a fresh container, drained from the beginning with a new iterator.
    const cf = await setupContainer(client, "feed");
    const loadStart = performance.now();
    let next = 0;
    const loaders = Array.from({ length: config.concurrency }, async () => {
      for (let i = next++; i < config.changeFeedDocs; i = next++)
        await cf.items.create(makeDoc(`cf-${i}`, i));
    });
    await Promise.all(loaders);
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const drains: { docs: number; pages: number; seconds: number; docsPerSec: number }[] = [];
    for (let d = 0; d < config.changeFeedDrains; d++) drains.push(await drainChangeFeed(cf));
    return {
      profile: summary,
      profiledRun: {
        writesPerSec: Math.round(w.ops / w.seconds),
        readsPerSec: Math.round(r.ops / r.seconds),
        // Over the server's own windows (its figures lag the client's asks under load).
        serverCpuCores: round2(
          (w.server.cpuMs + r.server.cpuMs) / Math.max(1, w.server.windowMs + r.server.windowMs),
        ),
      },
      changeFeedDrain: {
        docs: config.changeFeedDocs,
        maxItemCount: config.changeFeedMaxItemCount,
        docsPerSec: Math.round(median(drains.map((x) => x.docsPerSec))),
        drains: drains.map((x) => ({ ...x, seconds: round3(x.seconds) })),
        loadDocsPerSec: Math.round(config.changeFeedDocs / loadSeconds),
      },
    };
  } finally {
    await server.stop();
  }
}

export async function drainChangeFeed(container: Container) {
  const it = container.items.getChangeFeedIterator<BenchDoc>({
    changeFeedStartFrom: ChangeFeedStartFrom.Beginning(),
    maxItemCount: config.changeFeedMaxItemCount,
  });
  const start = performance.now();
  let docs = 0;
  let pages = 0;
  while (it.hasMoreResults) {
    const res = await it.readNext();
    if (res.statusCode === StatusCodes.NotModified) break;
    docs += res.result.length;
    pages++;
    if (pages > 10 * (config.changeFeedDocs / config.changeFeedMaxItemCount) + 100) {
      throw new Error("change feed did not reach 304");
    }
  }
  const seconds = (performance.now() - start) / 1000;
  if (docs !== config.changeFeedDocs) {
    throw new Error(`change feed drained ${docs} documents, expected ${config.changeFeedDocs}`);
  }
  return { docs, pages, seconds, docsPerSec: Math.round(docs / seconds) };
}
