/**
 * Which task-hub requests are the bench's own observation (status reads, waits, lists) rather than the engine's:
 * the observer's calls run inside `asObserver`, and a request plugin on the hub's CosmosClient tallies every
 * data-plane request made in that async context (count and `x-ms-request-charge`, per `db/container` and kind).
 * The engine's cost is then the emulator's meter minus this tally, exactly, whatever the hub does inside
 * getStatus / waitForChange / list (a poll loop a waiter starts runs in the waiter's context, so it counts as
 * observation too).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { CosmosHeaders, PluginConfig, RequestContext } from "@azure/cosmos";
import { meteredContainer } from "@cosmos-feed/devhost/durable";
import type { MeterSnapshot } from "@cosmos-feed/emulator";

const role = new AsyncLocalStorage<"observer">();

/** Runs `f` as observation: its requests are tallied apart from the engine's. */
export function asObserver<T>(f: () => Promise<T>): Promise<T> {
  return role.run("observer", f);
}

/** The emulator meter's operation kind of a request (routes/documents.ts): what the meter would file it under. */
function kindOf(context: RequestContext): string {
  const h = context.headers ?? {};
  if (h["x-ms-cosmos-is-query-plan-request"]) return "metadata";
  if (h["x-ms-cosmos-is-batch-request"]) return "batch";
  if (h["a-im"]) return "changeFeed";
  switch (context.operationType) {
    case "query":
      return "query";
    case "read":
      return /\/docs\/[^/]+$/.test(context.path ?? "") ? "read" : "readFeed";
    default:
      return String(context.operationType ?? "other");
  }
}

function chargeOf(headers: CosmosHeaders | undefined): number {
  const n = Number(headers?.["x-ms-request-charge"] ?? 0);
  return Number.isFinite(n) ? n : 0;
}

export class ObserverTally {
  private readonly tally: MeterSnapshot<string> = {};

  private add(container: string, kind: string, ru: number): void {
    const row = this.tally[container] ?? {};
    this.tally[container] = row;
    const e = row[kind] ?? { count: 0, ru: 0 };
    row[kind] = { count: e.count + 1, ru: e.ru + ru };
  }

  /** A copy, shaped as the emulator meter's snapshot (so `meterDelta` applies). */
  snapshot(): MeterSnapshot<string> {
    return structuredClone(this.tally);
  }

  plugin(): PluginConfig {
    return {
      on: "request",
      plugin: async (context, _node, next) => {
        const container = role.getStore() === "observer" ? meteredContainer(context.path) : undefined;
        try {
          const res = await next(context);
          if (container) this.add(container, kindOf(context), chargeOf(res.headers));
          return res;
        } catch (e) {
          // A 404 or 412 is charged and metered too.
          if (container)
            this.add(container, kindOf(context), chargeOf((e as { headers?: CosmosHeaders }).headers));
          throw e;
        }
      },
    };
  }
}
