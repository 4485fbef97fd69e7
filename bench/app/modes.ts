/**
 * `npm run bench:app -- --modes [serverless,manual]`: the flows phase on the app as `npm start` runs it — the dev
 * host's EMBEDDED emulator, in the throughput mode COSMOS_THROUGHPUT_MODE gives it (serverless: 5,000 RU/s per
 * physical partition; manual: containers.json's 400 RU/s per container, enforced with 429s) — instead of the
 * unthrottled emulator child of the other phases. Per mode: N PUTs at once (BENCH_MODE_FLOWS, default 200), each
 * followed to Succeeded; flows/s, the 429s per container, RU per flow. Writes bench/results/app-modes.json.
 */
import os from "node:os";
import { masterKeyHeaders, WELL_KNOWN_EMULATOR_KEY } from "@cosmos-feed/emulator";
import { type AppChild, startAppChild } from "../lib/app-child.js";
import { envNumber, round2 } from "../lib/stats.js";
import { waitUntilQuiet } from "./cpu.js";
import { PACED, type StormResult, storm } from "./flows.js";
import {
  appFolder,
  config,
  type EmulatorStats,
  HOST_SETTINGS,
  type HostStack,
  reactionsListening,
  trackChild,
} from "./setup.js";

export const MODES = ["serverless", "manual"] as const;
export type Mode = (typeof MODES)[number];

/** The modes `--modes a,b` names (default both). */
export function modesFromArgs(argv: readonly string[]): Mode[] {
  const i = argv.indexOf("--modes");
  const raw = i >= 0 ? argv[i + 1] : undefined;
  if (!raw || raw.startsWith("--")) return [...MODES];
  const picked = raw.split(",").map((m) => m.trim());
  for (const m of picked)
    if (!(MODES as readonly string[]).includes(m))
      throw new Error(`--modes takes ${MODES.join(", ")} (comma-separated); got '${m}'.`);
  return picked as Mode[];
}

/** PUTs per storm of this phase, and storms per mode. */
export const modeConfig = {
  flows: envNumber("BENCH_MODE_FLOWS", config.quick ? 20 : 200),
  rounds: envNumber("BENCH_MODE_ROUNDS", 1),
};

/** The embedded emulator's meter, read through its signed GET /_emulator/meter (it runs in the dev host's process). */
async function readMeter(endpoint: string, key: string): Promise<EmulatorStats["meter"]> {
  const res = await fetch(new URL("_emulator/meter", endpoint), {
    headers: masterKeyHeaders(key, "GET", "/_emulator/meter"),
  });
  if (res.status !== 200) throw new Error(`GET /_emulator/meter: ${res.status} ${await res.text()}`);
  return (await res.json()) as EmulatorStats["meter"];
}

/** `cosmos-feed start` on the compiled app with its embedded emulator (HTTP, any port, a data folder of its own). */
async function startEmbeddedStack(scratch: string, mode: Mode): Promise<HostStack> {
  const name = `npm-start-${mode}`;
  const children: AppChild["child"][] = [];
  const host = await startAppChild({
    appDir: appFolder(scratch, name),
    connectionString: undefined,
    args: ["--emulator-port", "0", "--emulator-tls", "off", "--data-dir", `${scratch}/${name}-data`],
    env: { ...HOST_SETTINGS, COSMOS_THROUGHPUT_MODE: mode },
    children,
    startTimeoutMs: config.hostStartTimeoutMs,
  });
  for (const c of children) trackChild(c);
  const endpoint = /Cosmos DB emulator listening on (\S+) /.exec(host.output())?.[1];
  const key = WELL_KNOWN_EMULATOR_KEY;
  if (!endpoint) throw new Error(`${name}: no emulator endpoint in the output:\n${host.output()}`);
  if (!host.output().includes(`Cosmos DB throughput mode: ${mode} `))
    throw new Error(`${name}: the dev host did not say it runs ${mode}:\n${host.output()}`);
  const deadline = Date.now() + config.hostStartTimeoutMs;
  while (!(await reactionsListening(host))) {
    if (Date.now() > deadline)
      throw new Error(`${name}: the reactions trigger did not start:\n${host.output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  let id = 0;
  return {
    name,
    host,
    url: host.baseUrl,
    emulator: {
      child: {},
      stats: async () => ({
        type: "stats",
        id: ++id,
        meter: await readMeter(endpoint, key),
        requests: {},
        cpuMs: 0,
      }),
    },
    async stop() {
      if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill("SIGTERM");
      await host.exited;
    },
  };
}

export interface ModeResult {
  mode: Mode;
  flows: number;
  /** Per storm: N ÷ (last endTime − first PUT sent). */
  flowsPerSecond: number[];
  succeeded: number[];
  /** 429s per storm, in all and by container. */
  throttled: number[];
  throttledByContainer: Record<string, number>[];
  acceptedToSucceededP50Ms: (number | null)[];
  acceptedToSucceededP95Ms: (number | null)[];
  /** RU and requests per flow by container (the last storm). */
  cosmosPerFlow: StormResult["cosmosPerFlow"];
  loadAverage1mBefore: number;
  loadAverage1mAfter: number;
}

/** The storms of every mode, one `npm start` stack after another (never two at once on 2 cores). */
export async function modesPhase(scratch: string, modes: readonly Mode[]): Promise<ModeResult[]> {
  const out: ModeResult[] = [];
  for (const mode of modes) {
    const stack = await startEmbeddedStack(scratch, mode);
    try {
      const r: ModeResult = {
        mode,
        flows: modeConfig.flows,
        flowsPerSecond: [],
        succeeded: [],
        throttled: [],
        throttledByContainer: [],
        acceptedToSucceededP50Ms: [],
        acceptedToSucceededP95Ms: [],
        cosmosPerFlow: {},
        loadAverage1mBefore: round2(os.loadavg()[0] ?? 0),
        loadAverage1mAfter: 0,
      };
      for (let round = 0; round < modeConfig.rounds; round++) {
        await waitUntilQuiet([stack]);
        const { result } = await storm(stack, modeConfig.flows, `${mode}-${round}`, PACED);
        r.flowsPerSecond.push(result.flowsPerSecond ?? 0);
        r.succeeded.push(result.succeeded ?? 0);
        r.throttledByContainer.push(result.throttledByContainer);
        r.throttled.push(Object.values(result.throttledByContainer).reduce((a, n) => a + n, 0));
        r.acceptedToSucceededP50Ms.push(result.acceptedToSucceededP50Ms);
        r.acceptedToSucceededP95Ms.push(result.acceptedToSucceededP95Ms);
        r.cosmosPerFlow = result.cosmosPerFlow;
        console.log(
          `   ${mode}: ${result.flowsPerSecond} flows/s (${result.succeeded}/${modeConfig.flows} Succeeded), ` +
            `429s ${JSON.stringify(result.throttledByContainer)}, load ${round2(os.loadavg()[0] ?? 0)}`,
        );
      }
      r.loadAverage1mAfter = round2(os.loadavg()[0] ?? 0);
      out.push(r);
    } finally {
      await stack.stop();
    }
  }
  return out;
}
