import { DefaultAzureCredential, ManagedIdentityCredential } from "@azure/identity";
import { describe, expect, it } from "vitest";
import { FakeClock } from "../../packages/core/src/clock.js";
import {
  type CosmosConnection,
  CosmosConnectionError,
  parseCosmosConnectionString,
  resolveCosmosConnection,
} from "../../packages/devhost/src/connections.js";
import {
  parseRetryOptions,
  RetryDelays,
  RetryOptionsError,
  runWithRetry,
} from "../../packages/devhost/src/cosmos/retry.js";

const KEY = "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";
const CS = `AccountEndpoint=https://acct.documents.azure.com:443/;AccountKey=${KEY};`;

/** Records which factory was asked for what (the factories are @azure/identity's unless replaced). */
function recordingFactories() {
  const made: Array<[string, unknown]> = [];
  const token = { getToken: async () => null };
  const record = (kind: string, args: unknown) => {
    made.push([kind, args]);
    return token;
  };
  return {
    made,
    credentials: {
      defaultAzure: (o: unknown) => record("default", o),
      managedIdentity: (o: unknown) => record("managed", o),
      workloadIdentity: (o: unknown) => record("workload", o),
      clientSecret: (t: string, c: string, s: string) => record("secret", [t, c, s]),
    },
  };
}

describe("resolveCosmosConnection", () => {
  it("a setting holding a connection string (keys case-insensitive, '=' inside the key kept)", () => {
    expect(resolveCosmosConnection("COSMOS", { COSMOS: CS })).toEqual({
      kind: "key",
      source: "COSMOS",
      endpoint: "https://acct.documents.azure.com:443/",
      key: KEY,
    });
    expect(parseCosmosConnectionString(`accountendpoint=http://x/;ACCOUNTKEY=${KEY}`)?.key).toBe(KEY);
  });

  it("looks up AzureWebJobs<NAME> and ConnectionStrings first, as the extension; names compare case-insensitively", () => {
    const other = CS.replace("acct", "prefixed");
    expect(resolveCosmosConnection("COSMOS", { COSMOS: CS, AzureWebJobsCOSMOS: other }).endpoint).toContain(
      "prefixed",
    );
    expect(resolveCosmosConnection("COSMOS", { COSMOS: CS, ConnectionStrings__COSMOS: other }).source).toBe(
      "ConnectionStrings:COSMOS",
    );
    expect(resolveCosmosConnection("cosmos", { COSMOS: CS }).kind).toBe("key");
  });

  it("an exact setting wins over a prefix section", () => {
    const c = resolveCosmosConnection("COSMOS", { COSMOS: CS, COSMOS__accountEndpoint: "https://other/" });
    expect(c.kind).toBe("key");
  });

  it("<NAME>__accountEndpoint alone → DefaultAzureCredential from @azure/identity", () => {
    const c = resolveCosmosConnection("COSMOS", {
      COSMOS__accountEndpoint: "https://acct.documents.azure.com:443/",
    });
    expect(c).toMatchObject({
      kind: "credential",
      endpoint: "https://acct.documents.azure.com:443/",
      source: "COSMOS",
    });
    expect((c as Extract<CosmosConnection, { kind: "credential" }>).credential).toBeInstanceOf(
      DefaultAzureCredential,
    );
  });

  it("__credential=managedidentity (+ __clientId) → ManagedIdentityCredential", () => {
    const c = resolveCosmosConnection("COSMOS", {
      COSMOS__accountEndpoint: "https://acct/",
      COSMOS__credential: "managedidentity",
      COSMOS__clientId: "00000000-0000-0000-0000-000000000001",
    }) as Extract<CosmosConnection, { kind: "credential" }>;
    expect(c.credential).toBeInstanceOf(ManagedIdentityCredential);
    expect(c.credentialType).toBe("ManagedIdentityCredential");

    const rec = recordingFactories();
    resolveCosmosConnection(
      "COSMOS",
      {
        COSMOS__accountEndpoint: "https://acct/",
        COSMOS__credential: "ManagedIdentity",
        COSMOS__clientId: "cid",
      },
      { credentials: rec.credentials },
    );
    resolveCosmosConnection(
      "COSMOS",
      { "COSMOS:accountEndpoint": "https://acct/", COSMOS__clientId: "cid", COSMOS__tenantId: "t" },
      { credentials: rec.credentials },
    );
    resolveCosmosConnection(
      "COSMOS",
      {
        COSMOS__accountEndpoint: "https://acct/",
        COSMOS__clientId: "c",
        COSMOS__tenantId: "t",
        COSMOS__clientSecret: "s",
      },
      { credentials: rec.credentials },
    );
    expect(rec.made).toEqual([
      ["managed", { clientId: "cid", resourceId: undefined }],
      ["default", { managedIdentityClientId: "cid", tenantId: "t" }],
      ["secret", ["t", "c", "s"]],
    ]);
  });

  it("nothing resolves → CosmosConnectionError listing every name tried", () => {
    let error: unknown;
    try {
      resolveCosmosConnection("COSMOS", { OTHER: CS });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(CosmosConnectionError);
    const e = error as CosmosConnectionError;
    expect(e.code).toBe("CosmosConnection");
    expect(e.tried).toEqual([
      "ConnectionStrings:AzureWebJobsCOSMOS",
      "ConnectionStrings:AzureWebJobsCOSMOS:accountEndpoint",
      "AzureWebJobsCOSMOS",
      "AzureWebJobsCOSMOS:accountEndpoint",
      "ConnectionStrings:COSMOS",
      "ConnectionStrings:COSMOS:accountEndpoint",
      "COSMOS",
      "COSMOS:accountEndpoint",
    ]);
    expect(e.message).toMatch(/'COSMOS__accountEndpoint'/);
  });

  it("a malformed value or a section without accountEndpoint is a clear error, not a fallback", () => {
    expect(() => resolveCosmosConnection("COSMOS", { COSMOS: "https://acct/" })).toThrowError(
      /not a Cosmos DB connection string/,
    );
    expect(() => resolveCosmosConnection("COSMOS", { COSMOS__credential: "managedidentity" })).toThrowError(
      /no 'accountEndpoint' \(found: credential\)/,
    );
    expect(() => resolveCosmosConnection("", {})).toThrowError(/has no 'connection'/);
  });
});

describe("retry options", () => {
  it("reads the v4 option and the worker metadata shapes alike", () => {
    expect(parseRetryOptions({ strategy: "fixedDelay", maxRetryCount: 3, delayInterval: 2500 })).toEqual({
      strategy: "fixedDelay",
      maxRetryCount: 3,
      delayMs: 2500,
    });
    // What @azure/functions hands the worker: retryStrategy + {seconds}.
    expect(
      parseRetryOptions({
        strategy: "exponentialBackoff",
        retryStrategy: "exponentialBackoff",
        maxRetryCount: -1,
        minimumInterval: { seconds: 2 },
        maximumInterval: { minutes: 1, seconds: 30 },
      }),
    ).toEqual({ strategy: "exponentialBackoff", maxRetryCount: -1, minimumMs: 2000, maximumMs: 90_000 });
    expect(
      parseRetryOptions({ retryStrategy: "fixedDelay", maxRetryCount: 1, delayInterval: "00:00:05" }),
    ).toMatchObject({ delayMs: 5000 });
    expect(parseRetryOptions(undefined)).toBeUndefined();
  });

  it.each([
    [{ strategy: "fixedDelay", maxRetryCount: 1 }, /delayInterval is required/],
    [
      { strategy: "fixedDelay", maxRetryCount: -2, delayInterval: 1 },
      /maxRetryCount must be an integer ≥ -1/,
    ],
    [
      { strategy: "exponentialBackoff", maxRetryCount: 1, minimumInterval: 5000, maximumInterval: 1000 },
      /must not be greater/,
    ],
    [{ strategy: "fixedDelay", maxRetryCount: 1, delayInterval: "soon" }, /TimeSpan/],
    [{ strategy: "linear", maxRetryCount: 1 }, /'fixedDelay' or 'exponentialBackoff'/],
  ])("refuses %j", (raw, message) => {
    expect(() => parseRetryOptions(raw)).toThrowError(RetryOptionsError);
    expect(() => parseRetryOptions(raw)).toThrowError(message);
  });

  it("exponential backoff: min, then min + r·2^(n−2)·min (r in 0.8–1.2), capped at max", () => {
    const mid = new RetryDelays(
      { strategy: "exponentialBackoff", maxRetryCount: -1, minimumMs: 1000, maximumMs: 10_000 },
      () => 0.5,
    );
    expect([1, 2, 3, 4, 5, 6].map(() => mid.next())).toEqual([1000, 2000, 3000, 5000, 9000, 10_000]);
    const low = new RetryDelays(
      { strategy: "exponentialBackoff", maxRetryCount: -1, minimumMs: 1000, maximumMs: 60_000 },
      () => 0,
    );
    expect([1, 2, 3].map(() => low.next())).toEqual([1000, 1800, 2600]);
  });

  it("runWithRetry: attempts = 1 + maxRetryCount, retryCount 0-based, stops waiting when aborted", async () => {
    const clock = new FakeClock();
    const seen: number[] = [];
    const run = runWithRetry({
      policy: { strategy: "fixedDelay", maxRetryCount: 2, delayMs: 100 },
      clock,
      attempt: async ({ retryCount }) => {
        seen.push(retryCount);
        throw new Error("no");
      },
    });
    await clock.advance(1000);
    expect(await run).toMatchObject({ ok: false, attempts: 3, aborted: false });
    expect(seen).toEqual([0, 1, 2]);

    const abort = new AbortController();
    const forever = runWithRetry({
      policy: { strategy: "fixedDelay", maxRetryCount: -1, delayMs: 1000 },
      clock,
      signal: abort.signal,
      attempt: async () => {
        throw new Error("no");
      },
    });
    await clock.advance(2500);
    abort.abort();
    expect(await forever).toMatchObject({ ok: false, attempts: 3, aborted: true });
  });
});
