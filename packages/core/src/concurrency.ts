/**
 * Runs `work` for every item with at most `limit` running at once, and resolves when all have finished. The first
 * rejection rejects the whole (after the ones already running settle, so nothing runs on unobserved); items not yet
 * started are not started then. Shared by the app's reactions and the change feed processor's bootstrap.
 */
export async function forEachConcurrently<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  if (!Number.isInteger(limit) || limit < 1)
    throw new RangeError(`limit must be a whole number ≥ 1; got ${limit}.`);
  let next = 0;
  let failed = false;
  let firstError: unknown;
  const lane = async () => {
    while (!failed && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (e) {
        if (!failed) firstError = e;
        failed = true;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failed) throw firstError;
}
