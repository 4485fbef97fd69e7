import type { ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Container } from "@azure/cosmos";
import { type AppChild, startAppChild } from "../../bench/lib/app-child.js";
import { until, WAIT_MS } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator } from "./emulator.js";

/**
 * Two dev hosts (`cosmos-feed start` child processes) running the unmodified fixture app test/fixtures/app-cjs on
 * one emulator (in this process, so another process to the hosts), as two Functions hosts share a trigger's leases:
 * the monitored container fixture/things has two physical ranges, so two leases (prefix `fixture-`) to share. The
 * fixture balances every 500 ms and lets a lease expire after 3 s.
 */
export const FIXTURE_APP_DIR = fileURLToPath(new URL("../fixtures/app-cjs", import.meta.url));

export interface TwoHosts {
  t: TestEmulator;
  a: AppChild;
  b: AppChild;
  /** The trigger's lease container, read with the test's own client. */
  leases: Container;
  /** `"<lease id> <Owner>"` of every lease of the trigger, sorted. */
  ownership(): Promise<string[]>;
  /** Resolves when each host owns one lease, unchanged over two seconds; the owners. */
  settled(timeoutMs?: number): Promise<Set<string>>;
  /** Kills both hosts (SIGKILL) and closes the emulator. */
  close(): Promise<void>;
}

export { until };

export async function startTwoHosts(options: { env?: Record<string, string> } = {}): Promise<TwoHosts> {
  const t = await startTestEmulator();
  const children: ChildProcess[] = [];
  try {
    const { database } = await t.client.databases.createIfNotExists({ id: "fixture" });
    // 12,000 RU/s: two physical ranges (the emulator's 6,000 RU/s per range), so two leases to share.
    await database.containers.createIfNotExists(
      { id: "things", partitionKey: { paths: ["/id"] } },
      { offerThroughput: 12_000 },
    );
    const conn = t.emulator.connectionString;
    const env = { FIXTURE_COSMOS: conn, ...options.env };
    const [a, b] = await Promise.all([
      startAppChild({ appDir: FIXTURE_APP_DIR, connectionString: conn, env, children }),
      startAppChild({ appDir: FIXTURE_APP_DIR, connectionString: conn, env, children }),
    ]);
    const leases = t.client.database("fixture").container("leases");
    const ownership = async () => {
      const { resources } = await leases.items
        .query<{ id: string; Owner?: string | null }>(
          "SELECT c.id, c.Owner FROM c WHERE STARTSWITH(c.id, 'fixture-') AND IS_DEFINED(c.LeaseToken)",
        )
        .fetchAll();
      return resources.map((l) => `${l.id} ${l.Owner}`).sort();
    };
    const settled = (timeoutMs = WAIT_MS) =>
      until(
        "each host to own one lease, steadily",
        async () => {
          const before = await ownership();
          const distinct = new Set(before.map((x) => x.split(" ")[1]));
          if (before.length !== 2 || distinct.size !== 2 || distinct.has("null")) return undefined;
          await new Promise((r) => setTimeout(r, 2_000));
          return (await ownership()).join() === before.join() ? distinct : undefined;
        },
        timeoutMs,
      );
    const close = async () => {
      for (const c of children) c.kill("SIGKILL");
      await Promise.all([a.exited, b.exited]);
      await t.close();
    };
    return { t, a, b, leases, ownership, settled, close };
  } catch (e) {
    for (const c of children) c.kill("SIGKILL");
    await t.close();
    throw e;
  }
}
