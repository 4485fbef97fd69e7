/**
 * How long a test waits for an outcome before it fails (ms). Waits are for outcomes (a lease moved, a document
 * was handled), never for how long they took: this bound is only there so that a broken build fails with a
 * message instead of the test's timeout (vitest.config.ts), and it is far above what a loaded 2-core machine needs
 * for outcomes that take a second or less alone. Speed is measured in bench/, never judged in a test. 60 s was not
 * enough at load 20 on 2 cores (six other jobs beside a CI run): dev hosts took longer to start, and durable
 * instances longer to complete, so a passing run is unchanged and only a broken one waits longer.
 */
export const WAIT_MS = 150_000;

/** How a wait polls: its bound, its pace, and what its failure says beside `what`. */
export interface WaitOptions {
  /** Fail after this long (ms); WAIT_MS unless given. */
  ms?: number;
  /** Poll this often (ms). */
  everyMs?: number;
  /** Appended to the failure's message (e.g. a child's output so far). */
  detail?: () => string;
  /** A probe that throws is polled again (its last error is in the failure) instead of failing the wait. */
  retryErrors?: boolean;
}

/**
 * Polls `read` (every 100 ms unless told) until it returns a value other than undefined (and false); fails with
 * `timed out: <what>` after `ms` — WAIT_MS unless given, as a number or in the options.
 */
export async function until<T>(
  what: string,
  read: () => T | undefined | false | Promise<T | undefined | false>,
  options: number | WaitOptions = {},
): Promise<T> {
  const o = typeof options === "number" ? { ms: options } : options;
  const deadline = Date.now() + (o.ms ?? WAIT_MS);
  let last: unknown;
  for (;;) {
    try {
      const v = await read();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      if (!o.retryErrors) throw e;
      last = e;
    }
    if (Date.now() > deadline) {
      const error = last === undefined ? "" : ` (last error: ${String(last)})`;
      throw new Error(`timed out: ${what}${error}${o.detail ? `\n${o.detail()}` : ""}`);
    }
    await new Promise((r) => setTimeout(r, o.everyMs ?? 100));
  }
}

/** Polls `cond` every `everyMs` (25) until it holds; fails with `Timed out waiting for <what>` after WAIT_MS. */
export async function waitUntil(
  what: string,
  cond: () => boolean | Promise<boolean>,
  everyMs = 25,
  ms = WAIT_MS,
): Promise<void> {
  const deadline = Date.now() + ms;
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
