import { entityFilterOf, jsonPayload, single } from "./client-api-input.js";
import { type DurableApiResponse, type DurableErrorContext, json, problem } from "./http-errors.js";
import type { TaskHubClient } from "./types.js";

/**
 * The extension's entity routes (HttpApiHandler: `entities/{name?}/{key?}`), as it serves them:
 * - `GET entities/{name}/{key}` (the durable client's readEntityState): 200 with the entity's state, 404 when it has
 *   none; the key `$` is the empty key.
 * - `GET entities[/{name}]` (ListEntitiesAsync): 200 with a page of `[{entityId: {name, key}, lastOperationTime,
 *   state}]` — entities that have a state, of that name when one is given — filtered by lastOperationTimeFrom/To,
 *   `top` entities a page, states with `fetchState=true`; the next page's token in `x-ms-continuation-token`.
 * - `POST entities/{name}/{key}?op=` (signalEntity; body = the operation's input, JSON): 202, the signal queued;
 *   `DELETE entities/{name}/{key}`: the same with the operation "delete".
 * A malformed parameter or token is a 400 naming it (the extension would ignore it).
 */
export async function entityRoute(
  hub: TaskHubClient,
  method: string,
  tail: string[],
  query: URLSearchParams,
  headers: { continuationToken: string | undefined },
  body: Uint8Array,
  maxPayloadBytes: number,
  where: DurableErrorContext,
): Promise<DurableApiResponse> {
  const [name, rawKey, extra] = tail;
  if (extra !== undefined) {
    return problem(
      404,
      "NoSuchEndpoint",
      "Entity routes: GET entities[/{name}] (listing), GET or POST entities/{name}/{key}.",
    );
  }
  const isRead = method === "GET" || method === "HEAD";
  if (isRead && rawKey === undefined) {
    where.route = `${method} entities${name === undefined ? "" : "/{name}"}`;
    if (headers.continuationToken !== undefined && headers.continuationToken !== "") {
      where.continuationToken = headers.continuationToken;
    }
    const filter = entityFilterOf(query, name, headers.continuationToken);
    if (filter.name !== undefined && filter.name.trim() === "") {
      return problem(400, "InvalidEntityId", "An entity name must not be blank.");
    }
    const page = await hub.listEntities(filter);
    return json(
      200,
      page.entities,
      page.continuationToken ? { "x-ms-continuation-token": page.continuationToken } : {},
    );
  }
  where.route = `${method} entities/{name}/{key}`;
  if (method !== "POST" && method !== "DELETE" && !isRead) {
    return json(
      405,
      { Message: "Use GET to read an entity's state or POST to signal it.", code: "MethodNotAllowed" },
      { allow: "GET, POST, DELETE" },
    );
  }
  // The extension reads `$` as the empty key (a path cannot carry an empty segment).
  const key = isRead && rawKey === "$" ? "" : rawKey;
  if (name === undefined || key === undefined || name.trim() === "") {
    return problem(400, "InvalidEntityId", "An entity id needs a name and a key: entities/{name}/{key}.");
  }
  where.instanceId = `@${name.toLowerCase()}@${key}`;
  if (isRead) {
    const r = await hub.readEntity(name, key);
    if (!r?.exists) {
      return problem(404, "EntityNotFound", `No entity '@${name.toLowerCase()}@${key}' with a state exists.`);
    }
    return r.state === undefined
      ? { status: 200, headers: {}, body: "" }
      : { status: 200, headers: { "content-type": "application/json; charset=utf-8" }, body: r.state };
  }
  const op = method === "DELETE" ? "delete" : (single(query, "op") ?? "");
  const input = jsonPayload(body, `The input of entity operation '${op}'`, maxPayloadBytes);
  await hub.signalEntity(name, key, op, input);
  return { status: 202, headers: {}, body: "" };
}
