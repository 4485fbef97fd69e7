/**
 * How long a test waits for an outcome before it fails (ms). Waits are for outcomes (a lease moved, a document
 * was handled), never for how long they took: this bound is only there so that a broken build fails with a
 * message instead of the test's timeout (vitest.config.ts), and it is far above what a loaded 2-core machine needs
 * for outcomes that take a second or less alone. Speed is measured in bench/, never judged in a test. 60 s was not
 * enough at load 20 on 2 cores (six other jobs beside a CI run): dev hosts took longer to start, and durable
 * instances longer to complete, so a passing run is unchanged and only a broken one waits longer.
 */
export const WAIT_MS = 150_000;

/** Polls `read` every 100 ms until it returns a value; fails with `timed out: <what>` after `ms`. */
export async function until<T>(what: string, read: () => Promise<T | undefined>, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Polls `cond` every `everyMs` until it holds; fails with `Timed out waiting for <what>` after WAIT_MS. */
export async function waitUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  everyMs = 25,
): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** Resolves as `work` does; fails with `timed out: <what>` if it has not settled after WAIT_MS. */
export async function settled<T>(what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), WAIT_MS);
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}
