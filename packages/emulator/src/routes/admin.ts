import { badRequest, notFound } from "../errors.js";
import type { RuMeter } from "../ru/meter.js";
import type { AdminHooks } from "../server.js";
import { jsonObjectBody, type Reply, type RequestContext } from "./context.js";

/**
 * Emulator administration under `/_emulator/*`, signed with the account key like every request:
 * - POST /_emulator/split  {databaseId, containerId, rangeId}  → {children: [ids]}
 * - POST /_emulator/merge  {databaseId, containerId, rangeIds: [left, right]}  → {merged: range}
 * - GET  /_emulator/meter                                      → RU used per container and operation kind
 * - POST /_emulator/meter/reset
 * - POST /_emulator/purge-expired                              → {purged: n}
 * - POST /_emulator/compact                                    → drop history past retention now
 */
export function adminRoute(ctx: RequestContext, meter: RuMeter, hooks: AdminHooks): Reply {
  const op = ctx.segments.slice(1).join("/");
  const key = `${ctx.method} ${op}`;
  switch (key) {
    case "POST split": {
      const b = jsonObjectBody(ctx);
      for (const f of ["databaseId", "containerId", "rangeId"]) {
        if (typeof b[f] !== "string") throw badRequest(`split needs a string '${f}'.`);
      }
      const c = ctx.account.container(b.databaseId as string, b.containerId as string);
      const children = c.splitRange(b.rangeId as string).map((r) => r.info());
      return { status: 200, body: { children } };
    }
    case "POST merge": {
      const b = jsonObjectBody(ctx);
      const ids = b.rangeIds;
      if (typeof b.databaseId !== "string" || typeof b.containerId !== "string") {
        throw badRequest("merge needs a string 'databaseId' and 'containerId'.");
      }
      if (!Array.isArray(ids) || ids.length !== 2 || !ids.every((x) => typeof x === "string")) {
        throw badRequest("merge needs 'rangeIds': the ids of two adjacent ranges, left first.");
      }
      const c = ctx.account.container(b.databaseId, b.containerId);
      return { status: 200, body: { merged: c.mergeRanges(ids[0], ids[1]).info() } };
    }
    case "GET meter":
      return { status: 200, body: meter.snapshot() };
    case "POST meter/reset":
      meter.reset();
      return { status: 204 };
    case "POST purge-expired":
      return { status: 200, body: { purged: hooks.purgeExpired() } };
    case "POST compact":
      ctx.account.compact(hooks.retentionMs);
      return { status: 204 };
    default:
      throw notFound(`No emulator admin operation '${key}'.`);
  }
}
