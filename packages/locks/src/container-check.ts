import type { Container } from "@azure/cosmos";
import { statusOf } from "@cosmos-feed/core/cosmos/errors";
import { LockContainerError } from "./errors.js";

/** The lock container must be partitioned by /id and have TTL on (else crashed holders and dead queues stay). */
export async function checkLockContainer(container: Container): Promise<void> {
  const missing = () => new LockContainerError(`The lock container '${container.id}' does not exist.`, 404);
  const { resource } = await container.read().catch((e: unknown) => {
    throw statusOf(e) === 404 ? missing() : e;
  });
  if (!resource) throw missing();
  const paths = resource.partitionKey?.paths ?? [];
  if (paths.length !== 1 || paths[0] !== "/id") {
    throw new LockContainerError(
      `The lock container '${container.id}' must be partitioned by /id; it is partitioned by ${paths.join(", ") || "nothing"}.`,
      400,
    );
  }
  if (resource.defaultTtl === undefined || resource.defaultTtl === null) {
    throw new LockContainerError(
      `The lock container '${container.id}' has TTL off: a crashed holder's lock would never be purged. Turn TTL on (defaultTtl: -1).`,
      400,
    );
  }
}
