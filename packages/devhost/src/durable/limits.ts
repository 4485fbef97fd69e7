import { jsonNestingDepth } from "@cosmos-feed/core/json";
import { TaskHubError } from "./errors.js";

/**
 * The task hub's design limits (docs/durable-design.md, "Limits"): what one document and one transactional batch
 * may hold on Cosmos DB (https://learn.microsoft.com/azure/cosmos-db/concepts-limits: 2 MB per item, 100
 * operations and 2 MB per transactional batch), and what a payload may be so that every commit fits them by
 * construction. The payload size itself is an app setting (DURABLE_MAX_PAYLOAD_BYTES, settings.ts).
 */
export const DURABLE_LIMITS = {
  /** Operations in one transactional batch (the service's limit). */
  batchOperations: 100,
  /** Request body of one transactional batch, with room for the envelope (bytes; the service allows 2 MB). */
  batchBytes: 1_900_000,
  /** History events one history chunk document holds at most. */
  chunkEvents: 500,
  /** Bytes of history events one chunk document holds at most (an event larger than this has a chunk alone). */
  chunkBytes: 1_200_000,
  /**
   * Bytes of history events the instance document holds after the chunks (`historyTail`) before they are written
   * as a chunk. A write's charge grows slowly with size (4.95 RU up to 1 KB, 6.67 at 4 KB: the published table,
   * learn.microsoft.com/azure/cosmos-db/understand-request-unit-consumption) while each extra document of a batch
   * costs at least 4.95, so a short orchestration's history is best kept in its instance document.
   */
  inlineHistoryBytes: 4_096,
  /** Nesting of objects and arrays in a payload (input, output, event data, custom status). */
  payloadDepth: 64,
  /**
   * Custom status as JSON text (bytes), as the extension documents it: "The custom status payload is limited to
   * 16 KB of UTF-16 JSON text" (learn.microsoft.com, durable-functions-custom-orchestration-status).
   */
  customStatusBytes: 16 * 1024,
  /**
   * How long an entity remembers an orchestration that sent it operations, to apply them once and in the order
   * sent (entity-order.ts), and how long an operation waits for its predecessor: the extension's
   * `EntityMessageReorderWindowInMinutes` and its default, 30 minutes (learn.microsoft.com, durable-functions-bindings,
   * host.json settings).
   */
  entityReorderWindowMs: 30 * 60_000,
} as const;

/** UTF-8 length of a JSON text (what it costs in a document). */
export function utf8Bytes(text: string | null | undefined): number {
  return text === null || text === undefined ? 0 : Buffer.byteLength(text, "utf8");
}

/**
 * Why a payload (JSON text) may not be stored, or undefined when it may: larger than `maxBytes`, or nested deeper
 * than DURABLE_LIMITS.payloadDepth. `what` names it ("The orchestration input", "The result of activity 'x'").
 */
export function payloadProblem(
  text: string | null | undefined,
  what: string,
  maxBytes: number,
): { statusCode: 400 | 413; code: string; message: string } | undefined {
  if (text === null || text === undefined) return undefined;
  const bytes = utf8Bytes(text);
  if (bytes > maxBytes) {
    return {
      statusCode: 413,
      code: "PayloadTooLarge",
      message: `${what} is ${bytes} bytes; the task hub stores at most ${maxBytes} (DURABLE_MAX_PAYLOAD_BYTES).`,
    };
  }
  const depth = jsonNestingDepth(text);
  if (depth > DURABLE_LIMITS.payloadDepth) {
    return {
      statusCode: 400,
      code: "PayloadTooDeep",
      message: `${what} nests objects and arrays ${depth} deep; the task hub allows at most ${DURABLE_LIMITS.payloadDepth}.`,
    };
  }
  return undefined;
}

/** payloadProblem as a thrown TaskHubError (the client operations: 413 / 400 at the door). */
export function checkPayload(text: string | null | undefined, what: string, maxBytes: number): void {
  const p = payloadProblem(text, what, maxBytes);
  if (p) throw new TaskHubError(p.message, p.statusCode, p.code);
}
