/**
 * The peer: the same orchestrations, replayed in memory by the project's own test helper
 * (packages/devhost/src/durable/testing.ts runOrchestration — the dev host's replay engine, no storage, activities called
 * in process), in the same run and process, so hub ÷ peer is what durability costs on this machine.
 *
 * testing.ts imports `InvocationContext` from @azure/functions by name; Node's ESM loader cannot see the named
 * exports of that CommonJS bundle (vitest can, which is where the helper is meant to run), so the bench loads it
 * behind a resolve hook that hands src/ modules an ES module re-exporting the CommonJS package's own objects.
 */
import { createRequire, register } from "node:module";
import { setTimeout as sleep } from "node:timers/promises";
import { median, round1, round2 } from "../lib/stats.js";
import { latency } from "./measure.js";
import { config, ROOT } from "./setup.js";
import { activities, expectedOutput, type OrchestratorName, orchestrators } from "./workload.js";

type Testing = typeof import("@cosmos-feed/devhost/durable/testing");

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** Registers the hook (once) and imports testing.ts. */
async function loadTesting(): Promise<Testing> {
  const fromRoot = `${ROOT}/package.json`;
  const names = Object.keys(createRequire(fromRoot)("@azure/functions") as object).filter((k) =>
    IDENTIFIER.test(k),
  );
  const shim =
    `import { createRequire } from "node:module"; const f = createRequire(${JSON.stringify(fromRoot)})("@azure/functions");` +
    `export default f; ${names.map((k) => `export const ${k} = f.${k};`).join(" ")}`;
  const shimUrl = `data:text/javascript,${encodeURIComponent(shim)}`;
  const srcUrl = new URL("packages/devhost/src/", `file://${ROOT}/`).href;
  const hooks = `export async function resolve(specifier, context, next) {
    if (specifier === "@azure/functions" && context.parentURL?.startsWith(${JSON.stringify(srcUrl)}))
      return { url: ${JSON.stringify(shimUrl)}, shortCircuit: true };
    return next(specifier, context);
  }`;
  register(`data:text/javascript,${encodeURIComponent(hooks)}`);
  return import("@cosmos-feed/devhost/durable/testing");
}

const peerActivities = Object.fromEntries(
  Object.entries(activities).map(([k, f]) => [k, (input: unknown) => f(input)]),
);

export async function peerScenarios() {
  const { runOrchestration } = await loadTesting();
  const run = async (name: OrchestratorName, input: number, instanceId: string) => {
    const t0 = performance.now();
    const r = await runOrchestration(orchestrators[name], {
      name,
      instanceId,
      input,
      activities: peerActivities,
    });
    const ok = r.status === "Completed" && r.output === expectedOutput[name](input);
    return { ms: performance.now() - t0, ok, episodes: r.episodes };
  };
  let wrong = 0;
  const count = <T extends { ok: boolean }>(r: T) => {
    if (!r.ok) wrong++;
    return r;
  };

  // 1. one at a time
  for (let i = 0; i < config.sequence.warmup; i++) await run("seq3", 1, `warm-${i}`);
  const seq = [];
  for (let i = 0; i < config.sequence.runs; i++) seq.push(count(await run("seq3", 1, `seq-${i}`)));

  // 2. N at once
  const n = config.burst.orchestrations;
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_v, i) => run("seq3", 1, `burst-${i}`).then(count)));
  const burstSeconds = (performance.now() - t0) / 1000;

  // 3. fan-out
  const fan = count(await run("fanOut", config.fanOut.activities, "fan-1"));

  // 4. beside a slow activity (one round: in memory the runs share nothing but the event loop)
  const { activityMs, delayMs, orchestrations: k } = config.slowNeighbour;
  const group = () => Promise.all(Array.from({ length: k }, (_v, i) => run("seq3", 1, `g-${i}`).then(count)));
  const alone = await group();
  const slow = run("slow", activityMs, "slow");
  await sleep(delayMs);
  const beside = await group();
  count(await slow);

  const p50Alone = median(alone.map((r) => r.ms));
  const p50Beside = median(beside.map((r) => r.ms));
  return {
    wrongOutputs: wrong,
    sequence: {
      latencyMs: latency(seq.map((r) => r.ms)),
      episodesPerOrchestration: round2(median(seq.map((r) => r.episodes))),
    },
    burst: {
      orchestrations: n,
      seconds: round2(burstSeconds),
      completedPerSec: round1(n / burstSeconds),
    },
    fanOut: {
      activities: config.fanOut.activities,
      seconds: round2(fan.ms / 1000),
      episodes: fan.episodes,
    },
    slowNeighbour: {
      aloneMs: latency(alone.map((r) => r.ms)),
      besideSlowMs: latency(beside.map((r) => r.ms)),
      addedP50Ms: round1(p50Beside - p50Alone),
    },
  };
}
