/**
 * Waits on a task hub (any TaskHubClient: Cosmos DB or memory, a hub of this process): read, and until the outcome
 * holds, wait for the hub's next change notification of the instance (waitForChange) — a commit here, the feed's
 * copy of another host's — with its poll as the fallback. Bounded by WAIT_MS; the failure says the last read.
 */
import { WAIT_MS } from "../../bench/lib/until.js";
import type { InstanceStatus, TaskHubClient } from "../../packages/devhost/src/durable/types.js";

/** Reads the instance (on any task hub: Cosmos DB or memory) until `done` holds; fails after WAIT_MS with the last status seen (and `log`, if given). */
export async function waitForStatus(
  hub: Pick<TaskHubClient, "getStatus" | "waitForChange">,
  instanceId: string,
  done: (s: InstanceStatus) => boolean,
  log?: string[],
): Promise<InstanceStatus> {
  const deadline = Date.now() + WAIT_MS;
  let last: InstanceStatus | undefined;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      last = await hub.getStatus(instanceId);
      if (last && done(last)) return last;
      await hub.waitForChange(instanceId, 200);
    } catch (e) {
      // A read that failed (a busy emulator) is tried again; its error is reported if nothing else comes.
      lastError = e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const tail = log ? `\nhub log (last 20):\n${log.slice(-20).join("\n")}` : "";
  throw new Error(
    `instance ${instanceId} did not get there in ${WAIT_MS} ms: last status ${JSON.stringify(last)?.slice(0, 500)}${lastError ? `, last error ${String(lastError)}` : ""}${tail}`,
  );
}

/** An entity's stored state as the hub reads it (undefined: it never ran an operation). */
export type StoredEntity = { exists: boolean; state: string | undefined } | undefined;

/**
 * Reads the entity `@name@key` until `done` holds, woken by the hub's commits of it (waitForChange); fails after
 * WAIT_MS with the last read (and `log`, if given).
 */
export async function waitForEntityState(
  hub: Pick<TaskHubClient, "readEntity" | "waitForChange">,
  name: string,
  key: string,
  done: (stored: StoredEntity) => boolean,
  log?: string[],
): Promise<StoredEntity> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const stored = await hub.readEntity(name, key);
    if (done(stored)) return stored;
    if (Date.now() > deadline) {
      const tail = log ? `\nhub log (last 20):\n${log.slice(-20).join("\n")}` : "";
      throw new Error(`@${name}@${key} did not get there in ${WAIT_MS} ms: ${JSON.stringify(stored)}${tail}`);
    }
    await hub.waitForChange(`@${name.toLowerCase()}@${key}`, 200);
  }
}
