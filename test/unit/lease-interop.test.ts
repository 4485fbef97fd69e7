import { type Container, CosmosClient } from "@azure/cosmos";
import { afterEach, describe, expect, it } from "vitest";
import {
  HANDOFF_FROM_PROPERTY,
  HANDOFF_PROPERTY,
  type Lease,
  newLease,
  parseLease,
  toLeaseDocument,
} from "../../packages/changefeed/src/leases/lease.js";
import {
  acquireAs,
  checkpointAs,
  releaseAs,
  renewAs,
} from "../../packages/changefeed/src/leases/mutations.js";
import { openLeaseStore } from "../../packages/changefeed/src/leases/open.js";
import { LeaseOperationCounters } from "../../packages/changefeed/src/leases/store.js";
import { CosmosFeedError } from "../../packages/core/src/errors.js";

/*
 * Interop of lease documents with .NET, Java and the Functions trigger (issue 9). Expectations are written by
 * hand from the other SDKs' rules (and the Java fixtures were encoded outside this code), never derived the
 * way the code derives them.
 */

const clients: CosmosClient[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.dispose();
});

/** A client configured with `endpoint` that never talks to the network here (no background refresh). */
function offlineClient(endpoint: string): CosmosClient {
  const c = new CosmosClient({
    endpoint,
    key: Buffer.from("fake-key").toString("base64"),
    connectionPolicy: { enableBackgroundEndpointRefreshing: false },
  });
  clients.push(c);
  return c;
}

/**
 * Fake containers for openLeaseStore: a service container read with a chosen `_rid` (the emulator hands out
 * rids it picks itself) and a lease container partitioned by /id. Only `read()` and `database.client` are used.
 */
function fakeContainers(
  client: CosmosClient,
  monitoredRid: string,
): { monitored: Container; leases: Container } {
  const monitored = {
    id: "orders",
    database: { client },
    read: async () => ({ resource: { id: "orders", _rid: monitoredRid } }),
  } as unknown as Container;
  const leases = {
    id: "leases",
    read: async () => ({ resource: { id: "leases", partitionKey: { paths: ["/id"] }, defaultTtl: -1 } }),
  } as unknown as Container;
  return { monitored, leases };
}

describe("lease prefix (.NET: processorName + CosmosClient.Endpoint.Host + _dbRid_collRid)", () => {
  it("uses the host of the configured endpoint, not the regional write endpoint", async () => {
    const client = offlineClient("https://myaccount.documents.azure.com:443/");
    // Fake: what getWriteEndpoint() answers on Azure once the account read named a regional endpoint.
    client.getWriteEndpoint = async () => "https://myaccount-westus2.documents.azure.com:443/";
    const { monitored, leases } = fakeContainers(client, "O7RwAKylJbY=");
    const store = await openLeaseStore({
      monitored,
      leaseContainer: leases,
      processorName: "proc",
      counters: new LeaseOperationCounters(),
    });
    expect(store.prefix).toBe("procmyaccount.documents.azure.com_O7RwAA==_O7RwAKylJbY=");
  });

  it("takes the host from a connection string's AccountEndpoint, as the Functions host does", async () => {
    const key = Buffer.from("fake-key").toString("base64");
    const client = new CosmosClient({
      connectionString: `AccountEndpoint=https://myaccount.documents.azure.com:443/;AccountKey=${key};`,
      connectionPolicy: { enableBackgroundEndpointRefreshing: false },
    });
    clients.push(client);
    client.getWriteEndpoint = async () => "https://myaccount-eastus.documents.azure.com:443/"; // fake: regional
    const { monitored, leases } = fakeContainers(client, "O7RwAKylJbY=");
    const store = await openLeaseStore({
      monitored,
      leaseContainer: leases,
      processorName: "",
      counters: new LeaseOperationCounters(),
    });
    expect(store.prefix).toBe("myaccount.documents.azure.com_O7RwAA==_O7RwAKylJbY=");
  });

  it("uses accountEndpoint when given (a custom domain the .NET hosts use)", async () => {
    const client = offlineClient("https://10.1.2.3:8081/");
    const { monitored, leases } = fakeContainers(client, "O7RwAKylJbY=");
    const store = await openLeaseStore({
      monitored,
      leaseContainer: leases,
      processorName: "",
      counters: new LeaseOperationCounters(),
      accountEndpoint: "https://MyAccount.documents.azure.com/",
    });
    // .NET's Uri.Host is lower-case.
    expect(store.prefix).toBe("myaccount.documents.azure.com_O7RwAA==_O7RwAKylJbY=");
  });

  it("refuses an accountEndpoint that is not a URL with a typed error", async () => {
    const client = offlineClient("https://myaccount.documents.azure.com/");
    const { monitored, leases } = fakeContainers(client, "O7RwAKylJbY=");
    await expect(
      openLeaseStore({
        monitored,
        leaseContainer: leases,
        processorName: "",
        counters: new LeaseOperationCounters(),
        accountEndpoint: "myaccount",
      }),
    ).rejects.toMatchObject({ code: "LeaseContainer" });
  });

  it("decodes rids with Cosmos's alphabet ('-' is '/'): container a-8dAKylJbY= is in database a-8dAA==", async () => {
    // By hand: "a-8d" = a(26) /(63) 8(60) d(29) → bytes 6B FF 1D; "AKyl" → 00 AC A5; "JbY=" → 25 B6.
    // Database = first 4 bytes 6B FF 1D 00 → base64 "a/8dAA==" → with '-' for '/': "a-8dAA==".
    // (Node's own decoder reads '-' as URL-safe '+', 62: bytes 6B EF 1D 00 → "a+8dAA==", a prefix .NET never writes.)
    const client = offlineClient("https://myaccount.documents.azure.com/");
    const { monitored, leases } = fakeContainers(client, "a-8dAKylJbY=");
    const store = await openLeaseStore({
      monitored,
      leaseContainer: leases,
      processorName: "",
      counters: new LeaseOperationCounters(),
      accountEndpoint: "https://myaccount.documents.azure.com/",
    });
    expect(store.prefix).toBe("myaccount.documents.azure.com_a-8dAA==_a-8dAKylJbY=");
  });
});

// Java epk-version lease fixtures. ContinuationToken = base64url (padding kept, Java's getUrlEncoder) of:
// {"V":1,"Rid":"O7RwAKylJbY=","Mode":"INCREMENTAL","StartFrom":{"Type":"BEGINNING"},"Continuation":{"V":1,
//  "Rid":"O7RwAKylJbY=","Continuation":[{"token":"\"24\"","range":{"min":"","max":"FF"}}],"Range":{"min":"","max":"FF"}}}
const JAVA_STATE_AT_24 =
  "eyJWIjoxLCJSaWQiOiJPN1J3QUt5bEpiWT0iLCJNb2RlIjoiSU5DUkVNRU5UQUwiLCJTdGFydEZyb20iOnsiVHlwZSI6IkJFR0lOTklORyJ9LCJDb250aW51YXRpb24iOnsiViI6MSwiUmlkIjoiTzdSd0FLeWxKYlk9IiwiQ29udGludWF0aW9uIjpbeyJ0b2tlbiI6IlwiMjRcIiIsInJhbmdlIjp7Im1pbiI6IiIsIm1heCI6IkZGIn19XSwiUmFuZ2UiOnsibWluIjoiIiwibWF4IjoiRkYifX19";
// Same, but two continuations ("\"24\"" for [,7F), "\"31\"" for [7F,FF)) and StartFrom NOW: not one position.
const JAVA_STATE_TWO_CONTINUATIONS =
  "eyJWIjoxLCJSaWQiOiJPN1J3QUt5bEpiWT0iLCJNb2RlIjoiSU5DUkVNRU5UQUwiLCJTdGFydEZyb20iOnsiVHlwZSI6Ik5PVyJ9LCJDb250aW51YXRpb24iOnsiViI6MSwiUmlkIjoiTzdSd0FLeWxKYlk9IiwiQ29udGludWF0aW9uIjpbeyJ0b2tlbiI6IlwiMjRcIiIsInJhbmdlIjp7Im1pbiI6IiIsIm1heCI6IjdGIn19LHsidG9rZW4iOiJcIjMxXCIiLCJyYW5nZSI6eyJtaW4iOiI3RiIsIm1heCI6IkZGIn19XSwiUmFuZ2UiOnsibWluIjoiIiwibWF4IjoiRkYifX19";
// {"V":1,"Rid":"O7RwAKylJbY=","Mode":"FULL_FIDELITY","StartFrom":{"Type":"NOW"},"Range":{"min":"","max":"FF"}}
const JAVA_STATE_FULL_FIDELITY_NO_CHECKPOINT =
  "eyJWIjoxLCJSaWQiOiJPN1J3QUt5bEpiWT0iLCJNb2RlIjoiRlVMTF9GSURFTElUWSIsIlN0YXJ0RnJvbSI6eyJUeXBlIjoiTk9XIn0sIlJhbmdlIjp7Im1pbiI6IiIsIm1heCI6IkZGIn19";

const PREFIX = "my-cosmos-tst.documents.azure.com_O7RwAA==_O7RwAKylJbY=";

/** A lease as Java's ServiceItemLeaseV1 serializer writes it (no properties, Mode, partitionKey). */
function javaLease(
  continuation: string | null,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: `${PREFIX}..-FF`,
    _etag: '"00000001-0000-0000-0000-000000000000"',
    LeaseToken: "-FF",
    ContinuationToken: continuation,
    timestamp: "2026-06-28T14:42:40.403196Z",
    Owner: null,
    version: 1,
    feedRange: { Range: { min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false } },
    _ts: 1782657760,
    ...extra,
  };
}

/** How Java reads a ContinuationToken back: base64url (it rejects '+' and '/'), then JSON. */
function javaDecode(token: unknown): unknown {
  expect(typeof token).toBe("string");
  expect(token).toMatch(/^[A-Za-z0-9_-]+={0,2}$/);
  expect((token as string).length % 4).toBe(0); // Java's encoder keeps the padding
  return JSON.parse(Buffer.from(token as string, "base64url").toString("utf8"));
}

describe("Java epk-version leases", () => {
  it("reads the etag inside Java's base64 ChangeFeedState as the lease's position", () => {
    const lease = parseLease(javaLease(JAVA_STATE_AT_24));
    expect(lease.version).toBe(1);
    expect(lease.feedRange).toEqual({ min: "", max: "FF" });
    expect(lease.continuationToken).toBe('"24"');
    expect(lease.mode).toBe("Incremental Feed");
  });

  it("writes a renewed Java lease back as Java wrote it: feedRange casing, no Mode, the same state", () => {
    const lease = parseLease(javaLease(JAVA_STATE_AT_24));
    const doc = toLeaseDocument(
      renewAs("host-a")({ ...lease, owner: "host-a" }),
      Date.parse("2026-07-01T00:00:00Z"),
    );
    expect(doc).not.toHaveProperty("FeedRange");
    expect(doc).not.toHaveProperty("Mode");
    expect(doc.feedRange).toEqual({
      Range: { min: "", max: "FF", isMinInclusive: true, isMaxInclusive: false },
    });
    expect(doc.ContinuationToken).toBe(JAVA_STATE_AT_24);
    expect(doc.Owner).toBe("host-a");
  });

  it("checkpoints a Java lease by putting the new etag into its state (Java hosts can go on from it)", () => {
    const lease = parseLease(javaLease(JAVA_STATE_AT_24, { Owner: "host-a" }));
    const doc = toLeaseDocument(checkpointAs("host-a", '"57"')(lease), 0);
    expect(doc).not.toHaveProperty("FeedRange");
    expect(doc).not.toHaveProperty("Mode");
    expect(javaDecode(doc.ContinuationToken)).toEqual({
      V: 1,
      Rid: "O7RwAKylJbY=",
      Mode: "INCREMENTAL",
      StartFrom: { Type: "BEGINNING" },
      Continuation: {
        V: 1,
        Rid: "O7RwAKylJbY=",
        Continuation: [{ token: '"57"', range: { min: "", max: "FF" } }],
        Range: { min: "", max: "FF" },
      },
    });
    // Read back by this library: the new position.
    expect(parseLease(doc as unknown as Record<string, unknown>).continuationToken).toBe('"57"');
  });

  it("writes the first checkpoint of a Java lease as a Java state with one continuation", () => {
    const lease = parseLease(javaLease(null, { Owner: "host-a" }));
    expect(lease.continuationToken).toBeNull();
    const renewed = toLeaseDocument(lease, 0);
    expect(renewed.ContinuationToken).toBeNull();
    const doc = toLeaseDocument(checkpointAs("host-a", '"9"')(lease), 0);
    // Java's ChangeFeedStateV1 with a continuation: V, Rid, Mode, StartFrom, Continuation{V, Rid, Continuation, Range}.
    expect(javaDecode(doc.ContinuationToken)).toEqual({
      V: 1,
      Rid: "O7RwAKylJbY=",
      Mode: "INCREMENTAL",
      StartFrom: { Type: "BEGINNING" },
      Continuation: {
        V: 1,
        Rid: "O7RwAKylJbY=",
        Continuation: [{ token: '"9"', range: { min: "", max: "FF", isMinInclusive: true } }],
        Range: { min: "", max: "FF", isMinInclusive: true },
      },
    });
  });

  it("moves the feed range of a checkpoint-less Java state into its new continuation and keeps its mode", () => {
    const lease = parseLease(javaLease(JAVA_STATE_FULL_FIDELITY_NO_CHECKPOINT, { Owner: "host-a" }));
    expect(lease.mode).toBe("Full-Fidelity Feed");
    expect(lease.continuationToken).toBeNull();
    expect(toLeaseDocument(lease, 0).ContinuationToken).toBe(JAVA_STATE_FULL_FIDELITY_NO_CHECKPOINT);
    const doc = toLeaseDocument(checkpointAs("host-a", '"12"')(lease), 0);
    expect(javaDecode(doc.ContinuationToken)).toEqual({
      V: 1,
      Rid: "O7RwAKylJbY=",
      Mode: "FULL_FIDELITY",
      StartFrom: { Type: "NOW" },
      Continuation: {
        V: 1,
        Rid: "O7RwAKylJbY=",
        Continuation: [{ token: '"12"', range: { min: "", max: "FF", isMinInclusive: true } }],
        Range: { min: "", max: "FF", isMinInclusive: true },
      },
    });
  });

  it("refuses to acquire a Java lease whose state is not one position of its range, with a typed error", () => {
    const lease = parseLease(javaLease(JAVA_STATE_TWO_CONTINUATIONS));
    let thrown: unknown;
    try {
      acquireAs(null, "host-a")(lease);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(CosmosFeedError);
    expect(thrown).toMatchObject({ code: "UnsupportedLease", documentId: `${PREFIX}..-FF` });
    // Whatever else rewrites it keeps the Java state as it was, even a (mistaken) checkpoint.
    expect(toLeaseDocument(lease, 0).ContinuationToken).toBe(JAVA_STATE_TWO_CONTINUATIONS);
    expect(toLeaseDocument(checkpointAs(null, '"99"')(lease), 0).ContinuationToken).toBe(
      JAVA_STATE_TWO_CONTINUATIONS,
    );
  });

  it("refuses a Java-looking continuation that does not decode, and never overwrites it", () => {
    const lease = parseLease(javaLease("eyJub3QganNvbg"));
    expect(() => acquireAs(null, "host-a")(lease)).toThrow(/cannot be processed/);
    expect(toLeaseDocument(lease, 0).ContinuationToken).toBe("eyJub3QganNvbg");
  });

  it("gives a split child of a Java lease the Java shape, with the parent's position at the child's range", () => {
    const parent = parseLease(javaLease(JAVA_STATE_AT_24, { Owner: "host-a" }));
    const child = newLease(
      PREFIX,
      "id",
      { min: "", max: "7F" },
      parent.continuationToken,
      parent.mode,
      {},
      parent,
    );
    const doc = toLeaseDocument(child, 0);
    expect(doc.id).toBe(`${PREFIX}..-7F`);
    expect(doc).not.toHaveProperty("FeedRange");
    expect(doc).not.toHaveProperty("Mode");
    expect(doc.feedRange).toEqual({ Range: { min: "", max: "7F" } });
    const state = javaDecode(doc.ContinuationToken) as {
      Continuation: { Continuation: unknown[]; Range: unknown };
    };
    expect(state.Continuation.Continuation).toEqual([
      { token: '"24"', range: { min: "", max: "7F", isMinInclusive: true } },
    ]);
    expect(state.Continuation.Range).toEqual({ min: "", max: "7F", isMinInclusive: true });
  });
});

describe(".NET and V2-library leases keep their shape", () => {
  it("does not add Mode to a lease that had none (V2 library: PartitionId, no Mode/FeedRange)", () => {
    const v2 = {
      id: `${PREFIX}..0`,
      PartitionId: "0",
      Owner: "old-host",
      ContinuationToken: '"11"',
      timestamp: "2026-06-28T14:42:40Z",
      properties: {},
      _etag: '"e"',
      _ts: 1,
    };
    const lease = parseLease(v2);
    const doc = toLeaseDocument(acquireAs("old-host", "host-a")(lease), 0);
    expect(doc).not.toHaveProperty("Mode");
    expect(doc.PartitionId).toBe("0");
    expect(doc.LeaseToken).toBe("0");
    expect(doc.ContinuationToken).toBe('"11"');
  });

  it("keeps a .NET FeedRange's non-default bounds flags while the range is unchanged", () => {
    const lease = parseLease({
      id: `${PREFIX}..0`,
      version: 0,
      LeaseToken: "0",
      FeedRange: { Range: { min: "", max: "FF", isMaxInclusive: false, isMinInclusive: true } },
      Owner: null,
      ContinuationToken: null,
      properties: {},
      timestamp: null,
      Mode: "Incremental Feed",
    });
    const doc = toLeaseDocument(lease, 0);
    expect(doc.FeedRange).toEqual({
      Range: { min: "", max: "FF", isMaxInclusive: false, isMinInclusive: true },
    });
    expect(doc.Mode).toBe("Incremental Feed");
  });

  it("writes Mode on the leases it creates", () => {
    const doc = toLeaseDocument(
      newLease(PREFIX, "id", { id: "1", min: "", max: "FF" }, null, "Incremental Feed"),
      0,
    );
    expect(doc.Mode).toBe("Incremental Feed");
    expect(Object.keys(doc)).toContain("FeedRange");
  });
});

describe("split children", () => {
  it("of a .NET lease without Mode (V2 era) are new .NET leases, with Mode", () => {
    const parent = parseLease({
      id: `${PREFIX}..0`,
      PartitionId: "0",
      FeedRange: { Range: { min: "", max: "FF" } },
      Owner: "host-a",
      ContinuationToken: '"11"',
      properties: {},
      timestamp: null,
    });
    const child = newLease(PREFIX, "id", { id: "1", min: "", max: "7F" }, '"11"', parent.mode, {}, parent);
    const doc = toLeaseDocument(child, 0);
    expect(doc.Mode).toBe("Incremental Feed");
    expect(doc.FeedRange).toEqual({ Range: { min: "", max: "7F" } });
    expect(doc.ContinuationToken).toBe('"11"');
  });
});

describe("hand-off hint", () => {
  const handedOff = (): Lease => {
    const released = releaseAs(
      "host-a",
      "host-b",
    )({
      ...newLease(PREFIX, "id", { id: "0", min: "", max: "FF" }, '"5"', "Incremental Feed", { team: "x" }),
      owner: "host-a",
    });
    expect(released.properties).toEqual({
      team: "x",
      [HANDOFF_PROPERTY]: "host-b",
      [HANDOFF_FROM_PROPERTY]: "host-a",
    });
    return released;
  };

  it("is cleared when the lease is acquired (by the successor or anyone else)", () => {
    expect(acquireAs(null, "host-b")(handedOff()).properties).toEqual({ team: "x" });
    expect(acquireAs(null, "host-c")(handedOff()).properties).toEqual({ team: "x" });
  });

  it("is not inherited by the leases that replace a split or merged lease (they are created owned)", () => {
    const parent = handedOff();
    const child = newLease(
      PREFIX,
      "id",
      { id: "1", min: "", max: "7F" },
      parent.continuationToken,
      parent.mode,
      parent.properties,
    );
    expect(child.properties).toEqual({ team: "x" });
  });
});
