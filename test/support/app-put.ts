import { HttpRequest, type HttpResponseInit, InvocationContext } from "@azure/functions";
import { putResource } from "../../functions/resources.js";

/**
 * `PUT /api/subscriptions/{sub}/resources/{name}` through the app's own function (called directly, as the host
 * would), with `body` as the JSON request body. The function's answer.
 */
export async function putThroughFunction(
  sub: string,
  name: string,
  body: unknown = { properties: { sku: "basic" } },
): Promise<HttpResponseInit> {
  return putResource(
    new HttpRequest({
      method: "PUT",
      url: `http://localhost:7071/api/subscriptions/${sub}/resources/${name}`,
      params: { subscriptionId: sub, resourceName: name },
      body: { string: JSON.stringify(body) },
    }),
    new InvocationContext(),
  );
}
