/**
 * The library's one error base (azure-sdk-for-js style, like `RestError`): every error it throws on purpose
 * carries a stable string `code` and, where an HTTP status describes it, `statusCode`. Catch
 * `CosmosFeedError` for "the library refused or gave up"; switch on `code` for the reason.
 */
export class CosmosFeedError extends Error {
  /** A stable, machine-readable reason (e.g. "LockHeld", "PreconditionFailed"). */
  readonly code: string;
  /** The HTTP status the condition maps to (409 held, 412 lost a race, 404 missing, …), when one does. */
  readonly statusCode?: number;

  constructor(message: string, options: { code?: string; statusCode?: number; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    // Default code: the class name without "Error" (LeaseContainerError → "LeaseContainer").
    this.code = options.code ?? new.target.name.replace(/Error$/, "");
    if (options.statusCode !== undefined) this.statusCode = options.statusCode;
  }
}

/** True for errors of this library (any subclass of CosmosFeedError). */
export function isCosmosFeedError(e: unknown): e is CosmosFeedError {
  return e instanceof CosmosFeedError;
}
