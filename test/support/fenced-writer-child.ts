/**
 * A lock holder that freezes (SIGSTOP on itself, as a GC pause or VM freeze would) between the read and the
 * write of a fenced update. argv[2] = JSON {endpoint, key, database, locks, data, name, ttlSeconds}.
 * Prints `{"token": n}` once it holds the lock; on a "go" line on stdin runs the update (freezing inside
 * `mutate` until the parent sends SIGCONT) and prints `{"ok": true}` or `{"error": "<name>"}`.
 */
import { createInterface } from "node:readline";
import { CosmosClient } from "@azure/cosmos";
import { fencedUpdate, LockClient } from "../../packages/locks/src/index.js";

const cfg = JSON.parse(process.argv[2] ?? "{}") as {
  endpoint: string;
  key: string;
  database: string;
  locks: string;
  data: string;
  name: string;
  ttlSeconds: number;
};
const client = new CosmosClient({ endpoint: cfg.endpoint, key: cfg.key });
const db = client.database(cfg.database);
const locks = new LockClient({
  container: db.container(cfg.locks),
  owner: `paused-${process.pid}`,
  ttlSeconds: cfg.ttlSeconds,
});
const lock = await locks.tryAcquire(cfg.name, { autoRenew: false });
process.stdout.write(`${JSON.stringify({ token: lock.fencingToken })}\n`);
await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once("line", () => resolve()));
let frozen = false;
try {
  await fencedUpdate<{ id: string; value: number }>(
    db.container(cfg.data),
    "counter",
    "counter",
    lock,
    (cur) => {
      if (!frozen) {
        frozen = true;
        process.kill(process.pid, "SIGSTOP"); // read done, write not sent: stopped here until SIGCONT
      }
      return { ...cur, value: cur.value + 1 };
    },
  );
  process.stdout.write(`${JSON.stringify({ ok: true })}\n`);
} catch (e) {
  process.stdout.write(`${JSON.stringify({ error: (e as Error).name })}\n`);
}
process.exit(0);
