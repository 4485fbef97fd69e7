import { DURABLE_HUB_SETTINGS } from "./settings.js";

/**
 * A function whose durable client call the dev host refused for a limit of its own (a payload over
 * DURABLE_MAX_PAYLOAD_BYTES: the Durable extension stores larger ones in blobs) fails with durable-functions'
 * generic error, `The operation failed with an unexpected status code: 413. Details: {"Message":…,"code":…}`. The
 * app did nothing the extension refuses, so its caller is told why, as for a binding the dev host cannot serve,
 * instead of the host's empty 500.
 */
const GENERIC_413 = /The operation failed with an unexpected status code: 413\. Details: (\{[^\n]*\})/;

/** The 500's body for such a failure; undefined for any other failure. */
export function durableLimitRefusal(error: unknown): string | undefined {
  const message = (error as { message?: unknown } | null | undefined)?.message;
  if (typeof message !== "string") return undefined;
  const details = GENERIC_413.exec(message)?.[1];
  if (details === undefined) return undefined;
  let body: { Message?: unknown; code?: unknown };
  try {
    body = JSON.parse(details) as { Message?: unknown; code?: unknown };
  } catch {
    return undefined;
  }
  const setting = DURABLE_HUB_SETTINGS.maxPayloadBytes;
  if (body.code !== "PayloadTooLarge" || typeof body.Message !== "string") return undefined;
  if (!body.Message.includes(`(${setting.setting})`)) return undefined;
  return `The function's durable client call was refused: ${body.Message} This is a limit of this dev host, not of the app or of Azure Functions (the Durable extension stores larger payloads): raise ${setting.setting} (at most ${setting.max}), or run the function under Azure Functions Core Tools (func start).`;
}
