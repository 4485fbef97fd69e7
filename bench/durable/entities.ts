/**
 * Durable bench, entities (issue 23): a counter entity (function-based, durable-functions 3.x, run by the SDK's
 * own Entity handler as the worker runs it) on a fresh task hub.
 *   - signals to ONE entity: N signals from the durable client (`signalEntity`, `sendConcurrency` in flight), time
 *     from the first send until the entity's state — read through the client — counts N;
 *   - signals to 100 entities: the same N spread round robin over `keys` entities, until every state counts its
 *     share;
 *   - callEntity round trip: one orchestration calling the counter `calls` times in sequence; a round trip is the
 *     time between two successive operations of the counter (the answer goes to the orchestration, it replays, its
 *     next call reaches the entity), taken in the entity invoker.
 * The in-memory peer (packages/devhost/src/durable/testing.ts) has no entities when this was written: the JSON says so.
 */
import { createRequire } from "node:module";
import type { EntityInvoker } from "@cosmos-feed/devhost/durable";
import { entityHandler, runEntityHandler } from "@cosmos-feed/devhost/durable/testing-entities";
import { median, round1, round2 } from "../lib/stats.js";
import { type Bench, deadlineIn, latency } from "./measure.js";
import { awaitInstance } from "./observe.js";
import { type BenchHub, config, openHub } from "./setup.js";

const _require = createRequire(import.meta.url);

const counter = entityHandler((context) => {
  const n = context.df.getState(() => 0) as number;
  if (context.df.operationName === "add") {
    context.df.setState(n + (context.df.getInput() as number));
    context.df.return(n + (context.df.getInput() as number));
  } else context.df.return(n);
});

/** The counter, through JSON as the worker's messages travel; `seen` gets each operation's entity key and time. */
function counterInvoker(seen: (key: string, at: number) => void): EntityInvoker {
  return async (name, input) => {
    if (name !== "counter") return { thrown: new Error(`no entity '${name}'`) };
    seen(input.self.key, performance.now());
    return runEntityHandler(counter, name, input);
  };
}

/** Runs `work` over `items` with at most `limit` at once. */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

/** Sends `signals` adds round robin over `keys` counters; seconds until every state counts its share. */
async function signalRun(h: BenchHub, keys: string[], signals: number) {
  const expected = new Map(keys.map((k) => [k, 0]));
  const sends = Array.from({ length: signals }, (_v, i) => keys[i % keys.length] as string);
  for (const k of sends) expected.set(k, (expected.get(k) ?? 0) + 1);
  const t0 = performance.now();
  let sentAt = 0;
  const sending = pool(sends, config.entities.sendConcurrency, async (k) => {
    await h.hub.signalEntity("counter", k, "add", "1");
  }).then(() => {
    sentAt = performance.now();
  });
  const waiting = new Set(keys);
  const deadline = deadlineIn(config.observe.timeoutMs);
  let reads = 0;
  while (waiting.size > 0 && performance.now() < deadline) {
    await Promise.all(
      [...waiting].map(async (k) => {
        reads++;
        const e = await h.hub.readEntity("counter", k);
        if (e?.state !== undefined && Number(JSON.parse(e.state)) >= (expected.get(k) ?? 0))
          waiting.delete(k);
      }),
    );
    if (waiting.size > 0) await new Promise((r) => setTimeout(r, config.entities.statePollMs));
  }
  const seconds = (performance.now() - t0) / 1000;
  await sending;
  let applied = 0;
  for (const k of keys) {
    const e = await h.hub.readEntity("counter", k);
    applied += e?.state === undefined ? 0 : Number(JSON.parse(e.state));
  }
  return {
    entities: keys.length,
    signals,
    /** Counted by reading every state at the end: more than `signals` would be a duplicate, fewer a loss. */
    applied,
    allApplied: waiting.size === 0,
    sendSeconds: round2((sentAt - t0) / 1000),
    seconds: round2(seconds),
    signalsPerSec: round1(signals / seconds),
    stateReads: reads,
  };
}

export async function entitiesScenario(b: Bench) {
  const c = config.entities;
  const opTimes: number[] = [];
  let ops = 0;
  const h = await openHub(b.db, "entities", {
    invokeEntity: counterInvoker((key, at) => {
      ops++;
      if (key.startsWith("calls-")) opTimes.push(at);
    }),
  });
  try {
    // Warm: connections, the entity handler, the engine's code paths.
    await signalRun(h, ["warm"], 20);
    const rounds = [];
    for (let r = 0; r < c.rounds; r++) {
      const oneEntity = await signalRun(h, [`one-${r}`], c.signals);
      const keys = Array.from({ length: c.keys }, (_v, i) => `many-${r}-${i}`);
      const manyEntities = await signalRun(h, keys, c.signals);
      opTimes.length = 0;
      const id = `calls-${r}`;
      await h.hub.startNew("callCounter", { instanceId: id, input: String(c.calls) });
      const o = await awaitInstance(h.hub, id, deadlineIn(config.observe.timeoutMs));
      const gaps = opTimes.slice(1).map((t, i) => t - (opTimes[i] as number));
      rounds.push({
        oneEntity,
        manyEntities,
        callEntity: {
          calls: c.calls,
          completed: o.status?.runtimeStatus === "Completed",
          output: o.status?.output ?? null,
          roundTripMs: latency(gaps.slice(c.warmup)),
          /** Operations of the caller's counter seen by the entity invoker (one per call; more is a duplicate). */
          operationsSeen: opTimes.length,
        },
      });
    }
    const oneRate = median(rounds.map((r) => r.oneEntity.signalsPerSec));
    const manyRate = median(rounds.map((r) => r.manyEntities.signalsPerSec));
    return {
      /** Medians over the rounds (each round on fresh entities and a fresh caller), then each round. */
      oneEntitySignalsPerSec: oneRate,
      manyEntitiesSignalsPerSec: manyRate,
      callEntityRoundTripP50Ms: median(rounds.map((r) => r.callEntity.roundTripMs.p50)),
      /** Ratio computed here: 100 entities vs one (one entity's pending signals go in one work item each round). */
      manyVsOne: round2(manyRate / oneRate),
      allApplied: rounds.every((r) => r.oneEntity.allApplied && r.manyEntities.allApplied),
      exactCounts: rounds.every(
        (r) =>
          r.oneEntity.applied === c.signals &&
          r.manyEntities.applied === c.signals &&
          r.callEntity.operationsSeen === c.calls,
      ),
      callsCompleted: rounds.every((r) => r.callEntity.completed && r.callEntity.output === c.calls),
      rounds,
      entityInvocations: ops,
      hubProblems: h.counters.problems,
      firstHubProblems: h.counters.firstProblems,
      peer: {
        available: false,
        reason:
          "packages/devhost/src/durable/testing.ts (the in-memory peer) runs no entities in this build: no in-memory figure to set beside these.",
      },
    };
  } finally {
    await h.hub.stop();
  }
}

/** What makes the bench exit 1: a signal not applied, a count that is not exact, a caller that went wrong. */
export function entityProblems(r: Awaited<ReturnType<typeof entitiesScenario>>): string[] {
  return [
    ...(r.allApplied ? [] : ["entities: signals not all applied within the timeout"]),
    ...(r.exactCounts
      ? []
      : ["entities: a count is not the number of signals or calls sent (lost or duplicated)"]),
    ...(r.callsCompleted ? [] : ["entities: a callEntity orchestration did not complete with its count"]),
  ];
}
