import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { errorMessage } from "../errorMessage.js";

/** Socket-level failures: the endpoint did not answer (wrong host or port, offline, TLS refused). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPROTO",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "ERR_SSL_WRONG_VERSION_NUMBER",
]);

function codeOf(e: unknown): string | undefined {
  let node: unknown = e;
  // The SDK wraps socket errors (RestError → cause); the code sits on one of them.
  for (let depth = 0; node && typeof node === "object" && depth < 4; depth++) {
    const code = (node as { code?: unknown }).code;
    if (typeof code === "string" && UNREACHABLE.has(code)) return code;
    node = (node as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The first line of an error's message, capped (the service's 401 text carries a long signature dump). */
export function shortMessage(e: unknown, max = 300): string {
  const text = errorMessage(e);
  const line = text.split("\n")[0].trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/**
 * Why a call on a Cosmos DB connection failed, in words that point at the fix: the credentials (401/403), the
 * endpoint (no answer), or the service's own message.
 */
export function connectionFailureReason(e: unknown): string {
  const status = statusOf(e);
  if (status === 401 || status === 403) {
    return `refused the credentials (HTTP ${status}): check the key or the identity's data-plane role. ${shortMessage(e)}`;
  }
  const code = codeOf(e);
  if (code)
    return `is unreachable (${code}): check the endpoint and that the account or emulator is running.`;
  return `failed${status ? ` (HTTP ${status})` : ""}: ${shortMessage(e)}`;
}

/** `connection 'COSMOS' (https://…:443/, from setting COSMOS)`: how messages name a connection. */
export function describeConnection(setting: string, where: string | undefined): string {
  return `connection '${setting}'${where ? ` (${where})` : ""}`;
}
