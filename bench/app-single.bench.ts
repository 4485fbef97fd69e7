/**
 * Phase 5's single request alone (`npx tsx bench/app-single.bench.ts`): 1,000 `noop` GETs one after another per
 * server and round, on phase 5's fixture and servers (bench/app/concurrency-servers.ts), the overhead = dev host p50
 * − bare node:http p50 of the same round. Made to compare two versions of the dev host in one run: with
 * BENCH_BEFORE_CHECKOUT set to another checkout (`git worktree add --detach <dir> <commit>`, node_modules linked),
 * its dev host is a third server in every round, and the report gives this checkout's p50 ÷ that one's per round.
 * Rounds alternate the servers' order, so a shared machine's drift hits each alike. Prints; writes no results file.
 *
 * BENCH_SINGLE_ROUNDS (10), BENCH_SINGLE_OPS (1000), BENCH_CONC_WARMUP_OPS (3000, unrecorded first), BENCH_BEFORE_CHECKOUT (unset: no third server),
 * BENCH_BEFORE_FIRST (set: that server starts first), BENCH_SINGLE_INTERLEAVE (unset: each server's requests back
 * to back, as phase 5; 1: request by request, see interleaved()), BENCH_CPU_PROF_DIR (unset: no profile): this
 * checkout's dev host and its worker write `node --cpu-prof` profiles there when they exit.
 */
import { Agent } from "node:http";
import { loadavg } from "node:os";
import { type Run, run } from "./app/concurrency.js";
import {
  type ServerChild,
  type ServerKind,
  startBareServer,
  startDevhostServer,
  writeFixture,
} from "./app/concurrency-servers.js";
import { config, ROOT } from "./app/setup.js";
import { httpCall } from "./lib/http-call.js";
import { envNumber, median, percentile, round2 } from "./lib/stats.js";

const rounds = envNumber("BENCH_SINGLE_ROUNDS", 10);
const ops = envNumber("BENCH_SINGLE_OPS", 1000);
const before = config.beforeCheckout;
const profileDir = process.env.BENCH_CPU_PROF_DIR || null;

const interleave = process.env.BENCH_SINGLE_INTERLEAVE === "1";

/**
 * BENCH_SINGLE_INTERLEAVE=1: one round sends `ops` requests to each server, taking turns request by request (one
 * client, each request after the previous one answered), so every server meets the shared machine's load of the
 * same moments: a paired comparison that back-to-back runs of 1,000 cannot give when the load swings between them.
 */
async function interleaved(servers: ServerChild[], ops: number): Promise<Map<ServerKind, Run>> {
  const agents = servers.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  try {
    const ms = servers.map((): number[] => []);
    const noop = async (i: number) => {
      const res = await httpCall(agents[i], "GET", `${servers[i].url}/api/noop`);
      if (res.status !== 200) throw new Error(`${servers[i].kind}: GET /api/noop answered ${res.status}`);
      return res.ms;
    };
    for (let i = 0; i < servers.length; i++) for (let k = 0; k < 3; k++) await noop(i); // the sockets
    const cpu0 = servers.map((s) => s.cpuMs());
    for (let n = 0; n < ops; n++) for (let i = 0; i < servers.length; i++) ms[i].push(await noop(i));
    const cpu1 = servers.map((s) => s.cpuMs());
    const perRequest = (a: number | null, b: number | null) =>
      a === null || b === null ? null : (b - a) / ops;
    return new Map(
      servers.map((s, i) => [
        s.kind,
        {
          p10Ms: percentile(ms[i], 10),
          p50Ms: percentile(ms[i], 50),
          p99Ms: percentile(ms[i], 99),
          requestsPerSecond: Number.NaN,
          serverCpuMsPerRequest: perRequest(cpu0[i].server, cpu1[i].server),
          appCpuMsPerRequest: perRequest(cpu0[i].app, cpu1[i].app),
          hostProbe: null,
        },
      ]),
    );
  } finally {
    for (const a of agents) a.destroy();
  }
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

const fixture = writeFixture();
const servers: ServerChild[] = [];
try {
  console.log(`load average at the start: ${load()}`);
  // node refuses --cpu-prof in NODE_OPTIONS: the host process gets it as an argument, its worker through the
  // setting the host passes node's arguments to the worker with.
  const profile = profileDir ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [];
  const env = profileDir
    ? { ...process.env, languageWorkers__node__arguments: profile.join(" ") }
    : process.env;
  if (before && process.env.BENCH_BEFORE_FIRST)
    servers.push(await startDevhostServer("before", fixture, before));
  servers.push(await startDevhostServer("devhost", fixture, ROOT, { nodeArgs: profile, env }));
  servers.push(await startBareServer(fixture));
  if (before && !process.env.BENCH_BEFORE_FIRST)
    servers.push(await startDevhostServer("before", fixture, before));
  const paths = Array.from({ length: ops }, () => "/api/noop");
  // Warm-up (not recorded): the JIT's tier-up, the caches (config.concWarmupOps).
  const warmup = Array.from({ length: config.concWarmupOps }, () => "/api/noop");
  for (const s of servers) await run(s, 1, warmup, false);
  const runs: Record<ServerKind, Run[]> = { devhost: [], bare: [], before: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? servers : [...servers].reverse();
    if (interleave) {
      const byKind = await interleaved(order, ops);
      for (const s of servers) runs[s.kind].push(byKind.get(s.kind) as Run);
    } else for (const s of order) runs[s.kind].push(await run(s, 1, paths, false));
    const line = servers.map((s) => `${s.kind} ${runs[s.kind][r].p50Ms.toFixed(3)}`).join(", ");
    console.log(`round ${r + 1}/${rounds}: p50 ${line} ms (load ${load()})`);
  }
  const p50 = (k: ServerKind) => round2(median(runs[k].map((x) => x.p50Ms)));
  const p99 = (k: ServerKind) => round2(median(runs[k].map((x) => x.p99Ms)));
  const cpu = (k: ServerKind) => {
    const of = (pick: (x: Run) => number | null) => round2(median(runs[k].map((x) => pick(x) ?? 0)));
    const apart = runs[k][0].appCpuMsPerRequest !== null;
    const both = of((x) => (x.serverCpuMsPerRequest ?? 0) + (x.appCpuMsPerRequest ?? 0));
    return apart
      ? `${both} (host ${of((x) => x.serverCpuMsPerRequest)}, worker ${of((x) => x.appCpuMsPerRequest)})`
      : `${both}`;
  };
  const paired = (a: ServerKind, b: ServerKind, f: (x: Run, y: Run) => number) =>
    median(runs[a].map((x, i) => f(x, runs[b][i])));
  const overhead = (k: ServerKind) => round2(paired(k, "bare", (x, y) => x.p50Ms - y.p50Ms));
  const overhead10 = (k: ServerKind) => round2(paired(k, "bare", (x, y) => x.p10Ms - y.p10Ms));
  const p10 = (k: ServerKind) => round2(median(runs[k].map((x) => x.p10Ms)));
  for (const s of servers) {
    const extra =
      s.kind === "bare" ? "" : `, overhead ${overhead(s.kind)} ms (at p10 ${overhead10(s.kind)} ms)`;
    console.log(
      `${s.kind}: p10 ${p10(s.kind)} ms, p50 ${p50(s.kind)} ms, p99 ${p99(s.kind)} ms, CPU ${cpu(s.kind)} ms/request${extra}`,
    );
  }
  if (before) {
    const ratio = paired("devhost", "before", (x, y) => x.p50Ms / y.p50Ms);
    const ratio10 = paired("devhost", "before", (x, y) => x.p10Ms / y.p10Ms);
    const overheadRatio = paired("devhost", "before", (x, y) => {
      const bare = runs.bare[runs.devhost.indexOf(x)].p50Ms;
      return (x.p50Ms - bare) / (y.p50Ms - bare);
    });
    console.log(
      `this checkout ÷ ${before}, per round, median: p50 ×${ratio.toFixed(3)}, p10 ×${ratio10.toFixed(3)}, overhead ×${overheadRatio.toFixed(3)}`,
    );
  }
  console.log(`load average at the end: ${load()}`);
} finally {
  for (const s of servers) await s.stop();
  fixture.remove();
}
