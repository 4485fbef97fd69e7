import { jsonPayload, single } from "./client-api-input.js";
import { type DurableApiResponse, json, problem } from "./http-errors.js";
import type { TaskHubClient } from "./types.js";
import { entityRouteRefusal } from "./unsupported.js";

/**
 * The extension's entity routes (HttpApiHandler: `entities/{name}/{key}`), what the durable client's readEntityState
 * and signalEntity call: GET → 200 with the entity's state, 404 when it has none; POST `?op=` (body = the operation's
 * input, JSON) → 202, the signal queued for the entity. Listing (`GET entities[/{name}]`, the client's getEntities)
 * and cleanEntityStorage are not served: 501 with the reason.
 */
export async function entityRoute(
  hub: TaskHubClient,
  method: string,
  path: string,
  tail: string[],
  query: URLSearchParams,
  body: Uint8Array,
  maxPayloadBytes: number,
): Promise<DurableApiResponse> {
  const [name, key, extra] = tail;
  if (
    name === undefined ||
    key === undefined ||
    extra !== undefined ||
    !hub.signalEntity ||
    !hub.readEntity
  ) {
    return problem(501, "NotSupported", entityRouteRefusal(method, path));
  }
  if (name.trim() === "" || key === "") {
    return problem(400, "InvalidEntityId", "An entity id needs a name and a key: entities/{name}/{key}.");
  }
  if (method === "GET" || method === "HEAD") {
    const r = await hub.readEntity(name, key);
    if (!r?.exists) {
      return problem(404, "EntityNotFound", `No entity '@${name.toLowerCase()}@${key}' with a state exists.`);
    }
    return r.state === undefined
      ? { status: 200, headers: {}, body: "" }
      : { status: 200, headers: { "content-type": "application/json; charset=utf-8" }, body: r.state };
  }
  if (method === "POST") {
    const op = single(query, "op") ?? "";
    const input = jsonPayload(body, `The input of entity operation '${op}'`, maxPayloadBytes);
    await hub.signalEntity(name, key, op, input);
    return { status: 202, headers: {}, body: "" };
  }
  return json(
    405,
    { Message: "Use GET to read an entity's state or POST to signal it.", code: "MethodNotAllowed" },
    {
      allow: "GET, POST",
    },
  );
}
