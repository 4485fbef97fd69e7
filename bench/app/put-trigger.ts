/**
 * Phase 2, PUT throughput under the subscription lock (`concurrency` clients for `putSeconds`: spread over 100
 * subscriptions vs all on one hot one), and phase 3, write (PUT acknowledged) → the reactions trigger's record
 * (`observed.at`) per feed poll delay, each on its own dev host child. Both from outside the host, over HTTP.
 */
import { percentile, round1, round2 } from "../lib/stats.js";
import { call, config, type HostStack, RESOURCE_BODY, startStack } from "./setup.js";

export interface PutRun {
  acceptedPerSecond: number;
  contendedShare: number;
  otherStatuses: number;
  p50Ms: number;
  p99Ms: number;
}

async function putRun(
  stack: HostStack,
  subscriptionOf: (client: number, n: number) => string,
): Promise<PutRun> {
  const deadline = performance.now() + config.putSeconds * 1000;
  const ms: number[] = [];
  let accepted = 0;
  let contended = 0;
  let other = 0;
  await Promise.all(
    Array.from({ length: config.concurrency }, async (_v, c) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const sub = subscriptionOf(c, n);
        const res = await call(
          "PUT",
          `${stack.url}/api/subscriptions/${sub}/resources/c${c}-${n}`,
          RESOURCE_BODY,
        );
        ms.push(res.ms);
        if (res.status === 201 || res.status === 200) accepted++;
        else if (res.status === 409) contended++;
        else other++;
      }
    }),
  );
  const total = accepted + contended + other;
  return {
    acceptedPerSecond: round1(accepted / config.putSeconds),
    contendedShare: round2(contended / Math.max(1, total)),
    otherStatuses: other,
    p50Ms: round2(percentile(ms, 50)),
    p99Ms: round2(percentile(ms, 99)),
  };
}

export async function putPhase(stack: HostStack): Promise<{ spreadOver100: PutRun; oneHot: PutRun }> {
  const spreadOver100 = await putRun(stack, (c, n) => `spread-${(c * 7 + n) % 100}`);
  const oneHot = await putRun(stack, () => "hot");
  return { spreadOver100, oneHot };
}

export interface TriggerRun {
  feedPollDelayMs: number;
  writes: number;
  p50Ms: number;
  p99Ms: number;
  goalP50Ms: number;
  met: boolean;
}

export async function triggerPhase(scratch: string, pollMs: number): Promise<TriggerRun> {
  const stack = await startStack(`trigger-${pollMs}`, scratch, { FEED_POLL_DELAY_MS: String(pollMs) });
  try {
    const lat: number[] = [];
    for (let i = 0; i < config.triggerWrites; i++) {
      const res = await call("PUT", `${stack.url}/api/subscriptions/trig/resources/w${i}`, RESOURCE_BODY);
      const acked = Date.now();
      const opUrl = String(res.headers["azure-asyncoperation"]);
      const deadline = acked + config.stormTimeoutMs;
      for (;;) {
        const o = JSON.parse((await call("GET", opUrl)).text) as { observed?: { at: string } };
        if (o.observed) {
          lat.push(Date.parse(o.observed.at) - acked);
          break;
        }
        if (Date.now() > deadline) throw new Error(`timed out: observed ${opUrl}`);
        await new Promise((r) => setTimeout(r, config.triggerReadIntervalMs));
      }
      // Spread the writes over the poll cycle (golden-ratio offsets: even without randomness): a write right after
      // a poll waits longest.
      await new Promise((r) => setTimeout(r, Math.round(((i * 0.618034) % 1) * pollMs)));
    }
    const goal = pollMs / 2 + 10;
    const p50 = percentile(lat, 50);
    return {
      feedPollDelayMs: pollMs,
      writes: lat.length,
      p50Ms: round1(p50),
      p99Ms: round1(percentile(lat, 99)),
      goalP50Ms: goal,
      met: p50 <= goal,
    };
  } finally {
    await stack.stop();
  }
}
