/**
 * A lock holder in its own process (for crash tests): argv[2] = JSON {endpoint, key, database, container, name,
 * ttlSeconds}. Acquires the lock, prints `{"token": n}` and keeps renewing until killed.
 */
import { CosmosClient } from "@azure/cosmos";
import { LockClient } from "../../packages/locks/src/index.js";

const cfg = JSON.parse(process.argv[2] ?? "{}") as {
  endpoint: string;
  key: string;
  database: string;
  container: string;
  name: string;
  ttlSeconds: number;
};
const client = new CosmosClient({ endpoint: cfg.endpoint, key: cfg.key });
const locks = new LockClient({
  container: client.database(cfg.database).container(cfg.container),
  owner: `child-${process.pid}`,
  ttlSeconds: cfg.ttlSeconds,
});
const lock = await locks.acquire(cfg.name, { waitMs: 30_000 });
process.stdout.write(`${JSON.stringify({ token: lock.fencingToken })}\n`);
setInterval(() => {}, 1000);
