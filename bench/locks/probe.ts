/** Probe: does acquire({waitMs, signal}) leave abort listeners on the caller signal? */
import { getEventListeners } from "node:events";
import type { Container } from "@azure/cosmos";
import { LockClient } from "@cosmos-feed/locks";
import { CountingLockClient } from "./setup.js";

export async function abortListenerProbe(locksC: Container) {
  const holder = new LockClient({ container: locksC, owner: "probe-holder" });
  const waiter = new CountingLockClient({ container: locksC, owner: "probe-waiter" });
  const lock = await holder.acquire("abort-listener-probe");
  const caller = new AbortController();
  const waitMs = 400;
  let outcome = "acquired";
  try {
    await (await waiter.acquire("abort-listener-probe", { waitMs, signal: caller.signal })).release();
  } catch (e) {
    outcome = (e as Error).name;
  }
  const leftover = getEventListeners(caller.signal, "abort").length;
  await lock.release();
  return {
    how:
      `a held lock; acquire(name, {waitMs: ${waitMs}, signal}) from another client until it gives up; then ` +
      "count the abort listeners still registered on the (never aborted) caller signal.",
    outcome,
    failedAttempts: waiter.held,
    leftoverAbortListeners: leftover,
  };
}
