import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * A task hub operation refused (bad instance id, an instance that exists, …): a `CosmosFeedError` whose `code` says
 * why in a word (e.g. "InvalidInstanceId") and whose `statusCode` is the HTTP answer.
 */
export class TaskHubError extends CosmosFeedError {
  /** The HTTP status the durable API answers with (400, 404, 409 …). */
  declare readonly statusCode: number;
  /** A refusal: `statusCode` the HTTP answer, `code` the reason. */
  constructor(message: string, statusCode: number, code: string) {
    super(message, { code, statusCode });
  }
}

/** Instance ids as Azure Storage's backend allows them: 1–100 characters, none of / \ # ? or control characters. */
export function validateInstanceId(id: unknown): string {
  const control =
    typeof id === "string" && [...id].some((ch) => ch.charCodeAt(0) < 0x20 || ch.charCodeAt(0) === 0x7f);
  if (typeof id !== "string" || id.length < 1 || id.length > 100 || /[/\\#?]/.test(id) || control) {
    throw new TaskHubError(
      `Invalid instance id ${JSON.stringify(typeof id === "string" ? id.slice(0, 120) : id)}: 1–100 characters, without / \\ # ? or control characters.`,
      400,
      "InvalidInstanceId",
    );
  }
  return id;
}
