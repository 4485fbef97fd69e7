import { rawRequest } from "./raw.js";

/** One raw change feed read (latest version) of a container, for tests that look at LSNs, etags and tokens. */

export interface RawFeedPage {
  status: number;
  etag: string | null;
  sessionToken: string | null;
  docs: { id: string; _lsn: number }[];
}

export interface RawFeedRead {
  rangeId?: string;
  /** If-None-Match: a continuation etag (`"5"`) or `*`. */
  etag?: string;
  maxItems?: number;
  epk?: { min: string; max: string };
}

export async function readFeed(
  server: { endpoint: string; key: string },
  dbId: string,
  containerId: string,
  read: RawFeedRead = {},
): Promise<RawFeedPage> {
  const headers: Record<string, string> = { "a-im": "Incremental Feed" };
  if (read.rangeId !== undefined) headers["x-ms-documentdb-partitionkeyrangeid"] = read.rangeId;
  if (read.etag !== undefined) headers["if-none-match"] = read.etag;
  if (read.maxItems !== undefined) headers["x-ms-max-item-count"] = String(read.maxItems);
  if (read.epk) {
    headers["x-ms-start-epk"] = read.epk.min;
    headers["x-ms-end-epk"] = read.epk.max;
  }
  const res = await rawRequest(server.endpoint, server.key, "GET", `/dbs/${dbId}/colls/${containerId}/docs`, {
    headers,
  });
  const body = res.body as { Documents?: { id: string; _lsn: number }[] } | undefined;
  return {
    status: res.status,
    etag: res.headers.get("etag"),
    sessionToken: res.headers.get("x-ms-session-token"),
    docs: res.status === 200 ? (body?.Documents ?? []) : [],
  };
}

/** Every change of a read, page by page (`maxItems` each) until a 304; the last etag too. */
export async function drainFeed(
  server: { endpoint: string; key: string },
  dbId: string,
  containerId: string,
  read: RawFeedRead,
): Promise<{ docs: { id: string; _lsn: number }[]; etag: string | null; pages: number }> {
  const docs: { id: string; _lsn: number }[] = [];
  let etag = read.etag;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await readFeed(server, dbId, containerId, { ...read, etag });
    if (page.status !== 200 && page.status !== 304)
      throw new Error(`change feed read answered ${page.status}`);
    etag = page.etag ?? undefined;
    if (page.status === 304) return { docs, etag: page.etag, pages };
    docs.push(...page.docs);
  }
  throw new Error("the change feed never answered 304");
}
