import { badRequest } from "../errors.js";

/** Id rules of the service for items, databases and containers. */

/**
 * The service's item id length limit, in UTF-8 bytes ("Maximum length of ID value: 1,023 bytes",
 * https://learn.microsoft.com/azure/cosmos-db/concepts-limits#per-item-limits).
 */
export const MAX_ID_BYTES = 1023;
/** Database and container ids: at most 255 characters. */
export const MAX_RESOURCE_ID_LENGTH = 255;
/** Database and container ids: no `/ \ ? #` (the SDK refuses them too). */
const ILLEGAL_RESOURCE_ID = /[/\\?#]/;

/**
 * Validates an id. Items (`what` = "document") follow the service's per-item rules (concepts-limits: at most
 * 1,023 bytes), plus what the SDK's URLs cannot carry: the dot segments `.` and `..` (URL normalization turns
 * `docs/..` into another path) and a trailing `?` (an empty query is dropped), so such an item is refused at create
 * instead of being unreachable afterwards. `/`, `\` and `#` are accepted at create, as the service accepts them
 * (Microsoft's CosmosItemTests.CreateDropItemWithInvalidIdCharactersTest creates "Invalid#/\\?Id", gets 404 reading
 * it by name, finds it by query and renames it through RID addresses; the SDK's maintainers: "the service does not
 * reject invalid characters", github.com/Azure/azure-cosmos-dotnet-v3/issues/2573): no name-based URL reaches such
 * an item (404), its RID does. A trailing space, `?` inside, `%`, `+` and any other Unicode are accepted.
 * Databases and containers keep the resource rules (no `/ \ ? #`, no trailing space, at most 255 characters).
 */
export function validateId(id: unknown, what = "document"): asserts id is string {
  if (id === undefined) {
    throw badRequest("The input content is invalid because the required properties - 'id; ' - are missing");
  }
  if (typeof id !== "string") throw badRequest(`The ${what} id must be a string; got ${JSON.stringify(id)}.`);
  if (id.length === 0) throw badRequest(`The ${what} id must not be empty.`);
  if (what !== "document") {
    if (id.length > MAX_RESOURCE_ID_LENGTH)
      throw badRequest(`The ${what} id is longer than ${MAX_RESOURCE_ID_LENGTH} characters.`);
    if (ILLEGAL_RESOURCE_ID.test(id))
      throw badRequest(`The ${what} id '${id}' contains an illegal character ('/', '\\', '?' or '#').`);
    if (id.endsWith(" ")) throw badRequest(`The ${what} id '${id}' must not end with a space.`);
    return;
  }
  const bytes = Buffer.byteLength(id);
  if (bytes > MAX_ID_BYTES)
    throw badRequest(`The document id is ${bytes} bytes long; the limit is ${MAX_ID_BYTES} bytes.`);
  if (id === "." || id === "..")
    throw badRequest(`The document id '${id}' is a URL dot segment; no request URL could address it.`);
  if (id.endsWith("?"))
    throw badRequest(
      `The document id '${id}' ends with '?'; request URLs drop an empty query, so no request could address it.`,
    );
}
