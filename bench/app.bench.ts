/**
 * App benchmark: the dev host's cost on the app's own HTTP path, PUT throughput under the subscription lock, how
 * soon the change feed trigger sees a write, and the durable provisioning flow end to end. Writes
 * bench/results/app.json.
 *
 *   npm run bench:app          (builds dist/ first when missing)
 *
 *   1. http     — GET one resource (a real read on the emulator): the dev host vs the SAME exported handler
 *                 (functions/resources.ts getResource) on a bare node:http server that builds the same
 *                 @azure/functions HttpRequest; sequential keep-alive requests, interleaved rounds, p50/p99.
 *   2. put      — PUT throughput with `concurrency` clients: spread over 100 subscriptions vs all on one hot one
 *                 (its lock serializes them: accepted/s, 409 share, p50/p99).
 *   3. trigger  — write (PUT acknowledged) → the reactions trigger's record (`observed.at`), at FEED_POLL_DELAY_MS
 *                 1000 (the app's default) and 200, each in its own dev host child process.
 *   4. durable  — PUT → operation Succeeded (trigger + validate/provision/finalize orchestration): p50, and
 *                 orchestrations completed per second with 100 PUTs at once.
 *
 * Order: 1, 4 (on a quiet host: no backlog of other orchestrations), 2, 3.
 * Knobs (environment): BENCH_HTTP_ROUNDS (6), BENCH_HTTP_OPS (300), BENCH_CONCURRENCY (16), BENCH_PUT_S (4),
 * BENCH_TRIGGER_WRITES (60). The emulator runs in this process for 1, 2 and 4 (in-memory); logs go to memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import {
  createServer,
  Agent as HttpAgent,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import os, { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type * as Functions from "@azure/functions";
import { startFromCommandLine } from "../src/devhost/index.js";
import { startEmulator } from "../src/emulator/index.js";
import { httpCall } from "../test/support/http-call.js";
import { envNumber, machineFacts, median, percentile, round1, round2 } from "./lib/stats.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
// @azure/functions is a CommonJS bundle whose named exports ESM cannot see: the same instance the app loads.
const { HttpRequest, HttpResponse, InvocationContext } = createRequire(import.meta.url)(
  "@azure/functions",
) as typeof Functions;
type HttpRequest = Functions.HttpRequest;
type InvocationContext = Functions.InvocationContext;
const RESULTS = join(ROOT, "bench", "results", "app.json");
const cfg = {
  httpRounds: envNumber("BENCH_HTTP_ROUNDS", 6),
  httpOps: envNumber("BENCH_HTTP_OPS", 300),
  concurrency: envNumber("BENCH_CONCURRENCY", 16),
  putSeconds: envNumber("BENCH_PUT_S", 4),
  triggerWrites: envNumber("BENCH_TRIGGER_WRITES", 60),
};

const agent = new HttpAgent({ keepAlive: true, maxSockets: 64 });
/** One request on a keep-alive connection; resolves with status, headers, body text and the time it took. */
const call = (method: string, url: string, body?: unknown) => httpCall(agent, method, url, body);

/** The bare baseline: node:http → the same exported handler, with the same @azure/functions request/response. */
async function bareServer(
  handler: (req: HttpRequest, ctx: InvocationContext) => Promise<unknown>,
  route: RegExp,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const url = `http://${req.headers.host}${req.url}`;
      const m = route.exec(new URL(url).pathname);
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers[k] = v;
      const request = new HttpRequest({
        method: req.method ?? "GET",
        url,
        headers,
        params: { ...(m?.groups ?? {}) },
        ...(chunks.length ? { body: { bytes: Buffer.concat(chunks) } } : {}),
      });
      const out = new HttpResponse((await handler(request, new InvocationContext())) as object);
      const body = Buffer.from(await out.arrayBuffer());
      res.writeHead(out.status, Object.fromEntries(out.headers.entries()));
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function until<T>(what: string, read: () => Promise<T | undefined>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const dist = (p: string) => pathToFileURL(join(ROOT, "dist", p)).href;

async function main(): Promise<void> {
  const began = performance.now();
  const machine = { ...machineFacts(ROOT), loadAverage1m: round2(os.loadavg()[0]) };
  console.log(
    `app bench: ${machine.cpuCount} × ${machine.cpuModel}, node ${machine.node}, load ${machine.loadAverage1m}`,
  );
  const scratch = mkdtempSync(join(tmpdir(), "bench-app-"));
  const emulator = await startEmulator({ port: 0 });
  Object.assign(process.env, { COSMOS_ENSURE_CONTAINERS: "true", ACTIVITY_FIRST_RETRY_INTERVAL_MS: "100" });
  const logs: string[] = [];
  const started = await startFromCommandLine({
    appDir: ROOT,
    port: 0,
    cosmos: emulator.connectionString,
    dataDir: join(scratch, "unused"),
    logSink: (r) => {
      if (logs.length < 1000) logs.push(r.message);
    },
  });
  const host = started.host.baseUrl;
  try {
    // ---- 1. HTTP: GET one resource, dev host vs bare node:http with the same handler -----------------------
    const { getResource } = (await import(dist("functions/resources.js"))) as {
      getResource: (r: HttpRequest, c: InvocationContext) => Promise<unknown>;
    };
    const bare = await bareServer(
      getResource,
      /\/api\/subscriptions\/(?<subscriptionId>[^/]+)\/resources\/(?<resourceName>[^/]+)$/,
    );
    const put = await call("PUT", `${host}/api/subscriptions/bench/resources/r1`, {
      properties: { sku: "basic" },
    });
    if (put.status !== 201) throw new Error(`PUT failed: ${put.status} ${put.text}`);
    const path = "/api/subscriptions/bench/resources/r1";
    const rounds: { devhost: { p50: number; p99: number }; bare: { p50: number; p99: number } }[] = [];
    for (let i = 0; i < 50; i++) {
      await call("GET", `${host}${path}`);
      await call("GET", `${bare.url}${path}`);
    }
    for (let r = 0; r < cfg.httpRounds; r++) {
      const sample = async (base: string) => {
        const ms: number[] = [];
        for (let i = 0; i < cfg.httpOps; i++) {
          const res = await call("GET", `${base}${path}`);
          if (res.status !== 200) throw new Error(`GET ${base}: ${res.status}`);
          ms.push(res.ms);
        }
        return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
      };
      // Alternate which goes first, so drift (GC, load) hits both alike.
      const [a, b] =
        r % 2 === 0 ? [await sample(host), await sample(bare.url)] : [undefined, await sample(bare.url)];
      rounds.push({ devhost: a ?? (await sample(host)), bare: b });
    }
    const http = {
      devhostP50Ms: round2(median(rounds.map((x) => x.devhost.p50))),
      devhostP99Ms: round2(median(rounds.map((x) => x.devhost.p99))),
      bareP50Ms: round2(median(rounds.map((x) => x.bare.p50))),
      bareP99Ms: round2(median(rounds.map((x) => x.bare.p99))),
      ratioP50: round2(median(rounds.map((x) => x.devhost.p50 / x.bare.p50))),
      ratioP99: round2(median(rounds.map((x) => x.devhost.p99 / x.bare.p99))),
      goalRatio: 1.2,
    };
    console.log(
      `1. http GET: dev host p50 ${http.devhostP50Ms} ms vs bare ${http.bareP50Ms} ms → ${http.ratioP50}×`,
    );
    bare.server.close();

    // ---- 4. durable: PUT → operation Succeeded ----------------------------------------------------------------
    const opOf = (res: { headers: Record<string, unknown> }) => String(res.headers["azure-asyncoperation"]);
    const settle = async (opUrl: string) =>
      until(`operation ${opUrl}`, async () => {
        const o = await call("GET", opUrl);
        const j = JSON.parse(o.text) as { status: string; startTime: string; endTime?: string };
        return j.status === "Succeeded" || j.status === "Failed" ? j : undefined;
      });
    const single: number[] = [];
    const orchestrationOnly: number[] = [];
    const durableRu = () => {
      const row = emulator.meter.snapshot()["cosmos-feed-app/durable-tasks"] ?? {};
      const all = Object.values(row);
      return {
        ru: all.reduce((a, e) => a + (e?.ru ?? 0), 0),
        throttled: all.reduce((a, e) => a + (e?.throttled ?? 0), 0),
      };
    };
    const ruBefore = durableRu();
    for (let i = 0; i < 10; i++) {
      const res = await call("PUT", `${host}/api/subscriptions/flow-${i}/resources/one`, {
        properties: { sku: "basic" },
      });
      const op = (await settle(opOf(res))) as {
        startTime: string;
        endTime?: string;
        observed?: { at: string };
      };
      single.push(Date.parse(op.endTime ?? op.startTime) - Date.parse(op.startTime));
      // From the trigger's start of the orchestration (it records `observed` just before) to the finalize step.
      if (op.observed && op.endTime)
        orchestrationOnly.push(Date.parse(op.endTime) - Date.parse(op.observed.at));
    }
    const ruAfter = durableRu();
    const burstStart = performance.now();
    const burst = await Promise.all(
      Array.from({ length: 100 }, (_v, i) =>
        call("PUT", `${host}/api/subscriptions/burst-${i}/resources/one`, { properties: { sku: "basic" } }),
      ),
    );
    const ops = await Promise.all(burst.map((r) => settle(opOf(r))));
    const burstSeconds = (performance.now() - burstStart) / 1000;
    const durable = {
      orchestrationP50Ms: round1(median(orchestrationOnly)),
      orchestrationGoalP50Ms: 50,
      durableContainerRuPerOrchestration: round1((ruAfter.ru - ruBefore.ru) / single.length),
      durableContainerThrottled: durableRu().throttled,
      putToSucceededP50Ms: round1(median(single)),
      putToSucceededMaxMs: Math.max(...single),
      concurrent: 100,
      succeeded: ops.filter((o) => o.status === "Succeeded").length,
      orchestrationsPerSecond: round1(100 / burstSeconds),
      note: "includes the reactions trigger's feed poll (FEED_POLL_DELAY_MS 1000) before the orchestration starts",
    };
    console.log(
      `4. durable: PUT → Succeeded p50 ${durable.putToSucceededP50Ms} ms; 100 at once: ${durable.orchestrationsPerSecond}/s`,
    );
    // ---- 2. PUT throughput: 100 subscriptions vs one hot one -----------------------------------------------
    const putRun = async (subscriptionOf: (client: number, n: number) => string) => {
      const deadline = performance.now() + cfg.putSeconds * 1000;
      const ms: number[] = [];
      let accepted = 0;
      let contended = 0;
      let other = 0;
      await Promise.all(
        Array.from({ length: cfg.concurrency }, async (_v, c) => {
          for (let n = 0; performance.now() < deadline; n++) {
            const sub = subscriptionOf(c, n);
            const res = await call("PUT", `${host}/api/subscriptions/${sub}/resources/c${c}-${n}`, {
              properties: { sku: "basic" },
            });
            ms.push(res.ms);
            if (res.status === 201 || res.status === 200) accepted++;
            else if (res.status === 409) contended++;
            else other++;
          }
        }),
      );
      const total = accepted + contended + other;
      return {
        acceptedPerSecond: round1(accepted / cfg.putSeconds),
        contendedShare: round2(contended / Math.max(1, total)),
        otherStatuses: other,
        p50Ms: round2(percentile(ms, 50)),
        p99Ms: round2(percentile(ms, 99)),
      };
    };
    const spread = await putRun((c, n) => `spread-${(c * 7 + n) % 100}`);
    const hot = await putRun(() => "hot");
    console.log(
      `2. PUT/s: 100 subscriptions ${spread.acceptedPerSecond}, one hot ${hot.acceptedPerSecond} (409 share ${hot.contendedShare})`,
    );

    await started.stop();

    // ---- 3. write → trigger, per feed poll delay, in child dev hosts ------------------------------------------
    const trigger: Record<string, unknown>[] = [];
    for (const pollMs of [1000, 200]) {
      const child = await startChild(emulator.connectionString, pollMs, scratch);
      try {
        const lat: number[] = [];
        for (let i = 0; i < cfg.triggerWrites; i++) {
          const res = await call("PUT", `${child.url}/api/subscriptions/trig-${pollMs}/resources/w${i}`, {
            properties: { sku: "basic" },
          });
          const acked = Date.now();
          const opUrl = opOf(res);
          const at = await until("observed", async () => {
            const o = JSON.parse((await call("GET", opUrl)).text) as { observed?: { at: string } };
            return o.observed?.at;
          });
          lat.push(Date.parse(at) - acked);
          // Spread the writes over the poll cycle: a write right after a poll waits longest.
          // (golden-ratio offsets: an even spread without randomness).
          await new Promise((r) => setTimeout(r, Math.round(((i * 0.618034) % 1) * pollMs)));
        }
        const goal = pollMs / 2 + 10;
        const p50 = percentile(lat, 50);
        trigger.push({
          feedPollDelayMs: pollMs,
          writes: lat.length,
          p50Ms: round1(p50),
          p99Ms: round1(percentile(lat, 99)),
          goalP50Ms: goal,
          met: p50 <= goal,
        });
        console.log(
          `3. write → trigger at poll ${pollMs} ms: p50 ${round1(p50)} ms (goal ≤ ${goal}: ${p50 <= goal ? "met" : "not met"})`,
        );
      } finally {
        child.proc.kill("SIGTERM");
        await new Promise((r) => child.proc.once("exit", r));
      }
    }

    const notes = [
      `HTTP GET through the dev host: p50 ${http.devhostP50Ms} ms vs ${http.bareP50Ms} ms for the same handler on bare node:http (${http.ratioP50}×, goal ≤ 1.2×: ${http.ratioP50 <= 1.2 ? "met" : "not met"}); p99 ${http.ratioP99}×.`,
      `PUT throughput with ${cfg.concurrency} clients: ${spread.acceptedPerSecond}/s over 100 subscriptions vs ${hot.acceptedPerSecond}/s on one (the lock serializes it: ${Math.round(hot.contendedShare * 100)} % answered 409) — ${round1(spread.acceptedPerSecond / Math.max(0.1, hot.acceptedPerSecond))}× .`,
      ...trigger.map(
        (t) =>
          `Write → trigger at feedPollDelay ${t.feedPollDelayMs} ms: p50 ${t.p50Ms} ms (goal ≤ ${t.goalP50Ms} ms: ${t.met ? "met" : "not met"}).`,
      ),
      `Durable provisioning (3 activities, from the trigger's start to finalize): p50 ${durable.orchestrationP50Ms} ms (goal ≤ 50 ms: ${durable.orchestrationP50Ms <= 50 ? "met" : "not met"}); PUT → Succeeded p50 ${durable.putToSucceededP50Ms} ms (includes the trigger's feed poll).`,
      `100 PUTs at once: their orchestrations completed at ${durable.orchestrationsPerSecond}/s; ${durable.durableContainerRuPerOrchestration} RU per orchestration on the task hub container, ${durable.durableContainerThrottled} requests throttled (429) at its 400 RU/s.`,
    ];
    for (const n of notes) console.log(n);
    const result = {
      machine: { ...machine, sharedMachine: true },
      config: { ...cfg, durationSeconds: Math.round((performance.now() - began) / 1000) },
      http,
      put: { concurrency: cfg.concurrency, seconds: cfg.putSeconds, spreadOver100: spread, oneHot: hot },
      trigger,
      durable,
      notes,
    };
    mkdirSync(dirname(RESULTS), { recursive: true });
    writeFileSync(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
    console.log(`wrote ${relative(process.cwd(), RESULTS)}`);
  } finally {
    await started.stop().catch(() => undefined);
    await emulator.close();
    agent.destroy();
    rmSync(scratch, { recursive: true, force: true });
  }
}

async function startChild(
  connectionString: string,
  pollMs: number,
  scratch: string,
): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(
    process.execPath,
    [
      join(ROOT, "bin", "cosmos-feed.js"),
      "start",
      ROOT,
      "--port",
      "0",
      "--no-build",
      "--cosmos",
      connectionString,
    ],
    {
      cwd: scratch,
      env: { ...process.env, FEED_POLL_DELAY_MS: String(pollMs), COSMOS_ENSURE_CONTAINERS: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  proc.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  proc.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const url = await until(
    "child dev host",
    async () => {
      const m = /(http:\/\/127\.0\.0\.1:\d+)\/api\//.exec(out);
      return m && out.includes("Host started") ? m[1] : undefined;
    },
    60_000,
  );
  // The trigger's listener comes up after the host: wait for it.
  await until(
    "reactions trigger",
    async () =>
      out.includes("reactToResources") && out.includes("Listener successfully started") ? true : undefined,
    30_000,
  ).catch(() => undefined);
  return { proc, url };
}

if (!existsSync(join(ROOT, "dist", "functions", "resources.js"))) {
  console.log("dist/ is missing: run `npm run build` first (npm run bench:app does).");
  process.exit(1);
}
await main();
