/**
 * The entity listing's query parser (entityFilterOf): the extension's parameters read as it names them (any case),
 * and fast-check (fixed seed) over random parameters, values and continuation tokens: every request either gives a
 * filter the task hub can run — `top` 1 … MAX_LIST_PAGE_SIZE, ISO dates, a printable bounded token — or a 400
 * TaskHubError naming what is wrong; nothing else is thrown.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  entityFilterOf,
  MAX_CONTINUATION_TOKEN_CHARS,
  MAX_LIST_PAGE_SIZE,
} from "../../packages/devhost/src/durable/client-api-input.js";
import { TaskHubError } from "../../packages/devhost/src/durable/errors.js";

/** Fixed, so a failure replays; change it only with a reason. */
const SEED = 20261126;

describe("entityFilterOf", () => {
  it("reads the extension's parameters, any case; defaults: no state, no bounds, no page size", () => {
    expect(entityFilterOf(new URLSearchParams(), undefined, undefined)).toEqual({ fetchState: false });
    const q = new URLSearchParams({
      FetchState: "TRUE",
      lastOperationTimeFrom: "2026-01-01T00:00:00Z",
      LASTOPERATIONTIMETO: "2026-01-02T00:00:00+01:00",
      top: " 7 ",
    });
    expect(entityFilterOf(q, "Counter", "tok")).toEqual({
      fetchState: true,
      name: "Counter",
      lastOperationTimeFrom: "2026-01-01T00:00:00.000Z",
      lastOperationTimeTo: "2026-01-01T23:00:00.000Z",
      top: 7,
      continuationToken: "tok",
    });
  });

  it("a malformed value is a 400 naming the parameter", () => {
    const refusal = (query: string, token?: string) => {
      try {
        entityFilterOf(new URLSearchParams(query), undefined, token);
      } catch (e) {
        return e instanceof TaskHubError ? [e.statusCode, e.code, e.message] : ["not a refusal", String(e)];
      }
      return "accepted";
    };
    expect(refusal("fetchState=1")).toEqual([
      400,
      "InvalidParameter",
      expect.stringContaining("'fetchState'"),
    ]);
    expect(refusal("top=0")).toEqual([400, "InvalidParameter", expect.stringContaining("'top'")]);
    expect(refusal(`top=${MAX_LIST_PAGE_SIZE + 1}`)).toEqual([400, "InvalidParameter", expect.anything()]);
    expect(refusal("lastOperationTimeTo=soon")).toEqual([
      400,
      "InvalidParameter",
      expect.stringContaining("'lastOperationTimeTo'"),
    ]);
    expect(refusal("", "é")).toEqual([400, "InvalidContinuationToken", expect.anything()]);
    expect(refusal("", "x".repeat(MAX_CONTINUATION_TOKEN_CHARS + 1))).toEqual([
      400,
      "InvalidContinuationToken",
      expect.anything(),
    ]);
  });

  it("fuzzed: a runnable filter or a 400, nothing else", () => {
    const key = fc.oneof(
      fc.constantFrom("fetchState", "lastOperationTimeFrom", "lastOperationTimeTo", "top", "TOP", "taskHub"),
      fc.string({ maxLength: 8 }),
    );
    const value = fc.oneof(
      fc.constantFrom(
        "true",
        "false",
        "1",
        "1000",
        "1001",
        "-1",
        "1e3",
        "2026-01-01",
        "+275760-09-13T00:00:00Z",
      ),
      fc.string({ maxLength: 30 }),
      fc.date({ noInvalidDate: false }).map((d) => (Number.isNaN(d.getTime()) ? "NaN" : d.toISOString())),
    );
    const token = fc.option(
      fc.oneof(
        fc.string({ maxLength: 40 }),
        fc.constantFrom(
          "x".repeat(MAX_CONTINUATION_TOKEN_CHARS),
          "x".repeat(MAX_CONTINUATION_TOKEN_CHARS + 1),
        ),
      ),
      { nil: undefined },
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(key, value), { maxLength: 6 }),
        fc.option(fc.string()),
        token,
        (pairs, name, t) => {
          let filter: ReturnType<typeof entityFilterOf>;
          try {
            filter = entityFilterOf(new URLSearchParams(pairs), name ?? undefined, t);
          } catch (e) {
            expect(e).toBeInstanceOf(TaskHubError);
            expect((e as TaskHubError).statusCode).toBe(400);
            return;
          }
          if (filter.top !== undefined) {
            expect(Number.isInteger(filter.top) && filter.top >= 1 && filter.top <= MAX_LIST_PAGE_SIZE).toBe(
              true,
            );
          }
          for (const d of [filter.lastOperationTimeFrom, filter.lastOperationTimeTo]) {
            if (d !== undefined) expect(new Date(d).toISOString()).toBe(d);
          }
          if (filter.continuationToken !== undefined) {
            expect(filter.continuationToken).toMatch(/^[\x20-\x7e]+$/);
            expect(filter.continuationToken.length).toBeLessThanOrEqual(MAX_CONTINUATION_TOKEN_CHARS);
          }
          expect(typeof filter.fetchState).toBe("boolean");
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });
});
