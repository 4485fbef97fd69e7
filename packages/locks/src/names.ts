import { InvalidLockNameError } from "./errors.js";
import { QUEUE_ID_PREFIX } from "./queue.js";

/** Longest lock name: the service's 255-character id limit minus the queue document's prefix. */
export const MAX_LOCK_NAME_LENGTH = 255 - QUEUE_ID_PREFIX.length;

/** Lock names become document ids: the service's id rules apply, and queue ids are reserved. */
export function validateLockName(name: unknown): asserts name is string {
  const reason =
    typeof name !== "string" || name.length === 0
      ? "it must be a non-empty string."
      : name.length > MAX_LOCK_NAME_LENGTH
        ? `at most ${MAX_LOCK_NAME_LENGTH} characters.`
        : /[/\\?#]/.test(name)
          ? "no '/', '\\', '?' or '#'."
          : name.endsWith(" ")
            ? "no trailing space."
            : name === "." || name === ".."
              ? "'.' and '..' are path segments, not ids."
              : name.startsWith(QUEUE_ID_PREFIX)
                ? `'${QUEUE_ID_PREFIX}' starts the ids of waiter queues.`
                : undefined;
  if (reason) throw new InvalidLockNameError(name, reason);
}
