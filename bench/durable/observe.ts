/**
 * How the bench learns that orchestrations ended — through the client API only, inside `asObserver` so the
 * requests it costs are tallied apart from the engine's (tally.ts).
 *
 * - One instance (scenarios 1, 3, 4): a waitForChange (at most `waitSliceMs`) is issued, the status is read at the
 *   same time; if it is not done yet the bench awaits the wait, then reads again. Issuing both together closes the
 *   gap a read-then-wait loop leaves (a commit between the read and the wait's own first look would leave the wait
 *   to run its whole slice). The end is the moment the read that saw a terminal status returned.
 * - Many instances (scenarios 2, 6): the instances are listed (id prefix, terminal statuses) every `listPollMs`
 *   until all are there; each one's end is its own `lastUpdatedTime` (the hub's clock, this process's), so the
 *   list's pace does not blur completion times, and the bench does not add one waiter per instance.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { InstanceStatus, RuntimeStatus, TaskHubClient } from "@cosmos-feed/devhost/durable";
import { config } from "./setup.js";
import { asObserver } from "./tally.js";

const TERMINAL: readonly RuntimeStatus[] = ["Completed", "Failed", "Terminated"];
export const isDone = (s: InstanceStatus | undefined) =>
  s !== undefined && TERMINAL.includes(s.runtimeStatus);

/** How one completion was observed. */
export interface Observation {
  status: InstanceStatus | undefined;
  /** performance.now() when the read that saw the end returned; undefined when the deadline passed first. */
  doneAt: number | undefined;
  statusReads: number;
  /** waitForChange calls awaited, and of those how many returned before their slice ran out. */
  waits: number;
  wokenEarly: number;
}

/** Observation counts summed over a scenario's instances. */
export interface ObservationTotals {
  instances: number;
  statusReads: number;
  waits: number;
  wokenEarly: number;
  /** Waits that ran their whole slice (the change came unseen, or none came). */
  slicesRunOut: number;
}

export function sumObservations(list: readonly Observation[]): ObservationTotals {
  const t = { instances: list.length, statusReads: 0, waits: 0, wokenEarly: 0, slicesRunOut: 0 };
  for (const o of list) {
    t.statusReads += o.statusReads;
    t.waits += o.waits;
    t.wokenEarly += o.wokenEarly;
    t.slicesRunOut += o.waits - o.wokenEarly;
  }
  return t;
}

/** Waits until `instanceId` is Completed/Failed/Terminated or `deadline` (performance.now()) passes. */
export function awaitInstance(
  hub: TaskHubClient,
  instanceId: string,
  deadline: number,
): Promise<Observation> {
  return asObserver(async () => {
    const o: Observation = { status: undefined, doneAt: undefined, statusReads: 0, waits: 0, wokenEarly: 0 };
    for (;;) {
      const slice = Math.min(config.observe.waitSliceMs, deadline - performance.now());
      const stop = new AbortController();
      const began = performance.now();
      let returned = Number.POSITIVE_INFINITY;
      const wait =
        slice > 0
          ? hub.waitForChange(instanceId, slice, stop.signal).then(
              () => {
                returned = performance.now();
              },
              () => {},
            )
          : Promise.resolve();
      o.statusReads++;
      o.status = await hub.getStatus(instanceId);
      const now = performance.now();
      if (isDone(o.status) || now >= deadline) {
        stop.abort();
        if (isDone(o.status)) o.doneAt = now;
        return o;
      }
      o.waits++;
      await wait;
      if (returned - began < slice) o.wokenEarly++;
    }
  });
}

/** Lists the instances whose id starts with `prefix` that have ended (every page). */
async function listEnded(hub: TaskHubClient, prefix: string): Promise<InstanceStatus[]> {
  const out: InstanceStatus[] = [];
  let continuationToken: string | undefined;
  do {
    const page = await hub.list({
      instanceIdPrefix: prefix,
      runtimeStatus: [...TERMINAL],
      top: 100,
      showInput: false,
      ...(continuationToken ? { continuationToken } : {}),
    });
    out.push(...page.instances);
    continuationToken = page.continuationToken;
  } while (continuationToken);
  return out;
}

export interface ManyObservation {
  /** The ended instances (all `count` of them unless the deadline passed). */
  ended: InstanceStatus[];
  listRounds: number;
}

/** Waits until `count` instances with ids starting `prefix` have ended, or `deadline` (performance.now()). */
export function awaitAll(
  hub: TaskHubClient,
  prefix: string,
  count: number,
  deadline: number,
): Promise<ManyObservation> {
  return asObserver(async () => {
    let listRounds = 0;
    for (;;) {
      listRounds++;
      const ended = await listEnded(hub, prefix);
      if (ended.length >= count || performance.now() >= deadline) return { ended, listRounds };
      await sleep(config.observe.listPollMs);
    }
  });
}

/** ms from `startedAtEpochMs` to the instance's lastUpdatedTime (the commit that ended it). */
export const endedAfterMs = (s: InstanceStatus, startedAtEpochMs: number): number =>
  Date.parse(s.lastUpdatedTime) - startedAtEpochMs;
