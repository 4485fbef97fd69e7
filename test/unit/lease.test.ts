import { describe, expect, it } from "vitest";
import {
  isAvailable,
  leasePrefix,
  newLease,
  parseLease,
  parseLeaseTimestamp,
  toLeaseDocument,
} from "../../packages/changefeed/src/leases/lease.js";

describe("lease documents", () => {
  it("derives the .NET prefix from processor name, account host and rids", () => {
    expect(
      leasePrefix("", "https://my-cosmos-tst.documents.azure.com:443/", "O7RwAA==", "O7RwAKylJbY="),
    ).toBe("my-cosmos-tst.documents.azure.com_O7RwAA==_O7RwAKylJbY=");
  });

  it("reads the real .NET lease dump and writes it back with the same fields", () => {
    const dump = {
      id: "my-cosmos-tst.documents.azure.com_O7RwAA==_O7RwAKylJbY=..0",
      partitionKey: "my-cosmos-tst.documents.azure.com_O7RwAA==_O7RwAKylJbY=..0",
      version: 0,
      _etag: '"1c00e6ff-0000-0800-0000-6a4132e00000"',
      LeaseToken: "0",
      FeedRange: { Range: { min: "", max: "FF" } },
      Owner: "ce68680e-76c0-437c-983a-45cd39474490",
      ContinuationToken: '"24"',
      properties: {},
      timestamp: "2026-06-28T14:42:40.403196Z",
      Mode: "Incremental Feed",
      _rid: "x",
      _self: "y",
      _attachments: "attachments/",
      _ts: 1782657760,
    };
    const lease = parseLease(dump);
    expect(lease.partitionKeyValue).toBe(dump.partitionKey);
    expect(lease.continuationToken).toBe('"24"');
    expect(lease.timestampMs).toBe(Date.parse("2026-06-28T14:42:40.403Z"));
    const written = toLeaseDocument(lease, Date.parse("2026-07-01T00:00:00Z"));
    expect(Object.keys(written)).toEqual([
      "id",
      "partitionKey",
      "version",
      "_etag",
      "LeaseToken",
      "FeedRange",
      "Owner",
      "ContinuationToken",
      "properties",
      "timestamp",
      "Mode",
    ]);
    expect(written.timestamp).toBe("2026-07-01T00:00:00.000Z");
  });

  it("writes nulls (not omissions) for a fresh lease, as .NET does", () => {
    const doc = toLeaseDocument(
      newLease("p", "id", { id: "3", min: "10", max: "20" }, null, "Incremental Feed"),
      0,
    );
    expect(doc).toMatchObject({
      id: "p..3",
      version: 0,
      LeaseToken: "3",
      Owner: null,
      ContinuationToken: null,
      properties: {},
    });
    expect(doc.FeedRange).toEqual({ Range: { min: "10", max: "20" } });
    expect("partitionKey" in doc).toBe(false);
  });

  it("names EPK (version 1) leases min-max and requires their FeedRange", () => {
    const l = newLease("p", "partitionKey", { min: "", max: "05C1DFFFFFFFF8" }, '"7"', "Incremental Feed");
    expect(l.id).toBe("p..-05C1DFFFFFFFF8");
    expect(l.version).toBe(1);
    expect(toLeaseDocument(l, 0).partitionKey).toBe("p..-05C1DFFFFFFFF8");
    expect(() => parseLease({ id: "p..x", version: 1, LeaseToken: "x" })).toThrow(/FeedRange/);
  });

  it("accepts legacy PartitionId leases, Java timestamps and falls back to _ts", () => {
    const legacy = parseLease({
      id: "p..4",
      PartitionId: "4",
      Owner: "",
      timestamp: "2026-01-01T00:00:00.123456789Z[UTC]",
    });
    expect(legacy.leaseToken).toBe("4");
    expect(legacy.owner).toBeNull();
    expect(legacy.timestampMs).toBe(Date.parse("2026-01-01T00:00:00.123Z"));
    expect(parseLease({ id: "p..5", LeaseToken: "5", timestamp: null, _ts: 100 }).timestampMs).toBe(100_000);
    expect(parseLeaseTimestamp("garbage")).toBeUndefined();
  });

  it("is available when unowned or expired", () => {
    const l = {
      ...newLease("p", "id", { id: "0", min: "", max: "FF" }, null, "Incremental Feed"),
      owner: "a",
      timestampMs: 1000,
    };
    expect(isAvailable(l, 1000 + 60_000, 60_000)).toBe(false);
    expect(isAvailable(l, 1000 + 60_001, 60_000)).toBe(true);
    expect(isAvailable({ ...l, owner: null }, 1000, 60_000)).toBe(true);
  });
});
