import type { ErrorResponse } from "@azure/cosmos";

/** Runs `fn` and returns the ErrorResponse it throws (fails the test if it does not throw). */
export async function errorOf(fn: () => Promise<unknown>): Promise<ErrorResponse> {
  try {
    await fn();
  } catch (e) {
    return e as ErrorResponse;
  }
  throw new Error("expected the operation to fail");
}
