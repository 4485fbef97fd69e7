import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Container } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AppChild,
  buildAppFolder,
  FAST_APP_SETTINGS,
  startAppChild,
} from "../../bench/lib/app-child.js";
import { until as pollUntil, WAIT_MS } from "../../bench/lib/until.js";
import { startTestEmulator, type TestEmulator } from "../support/emulator.js";

// End to end: the app itself (functions/, compiled by tsconfig.build.json as `npm run build` does) run by
// `node packages/devhost/bin/cosmos-feed.js start <app> --port 0 --cosmos "<connection string>"` as a child process, driven over
// real HTTP with fetch; the test reads the emulator through the unmodified SDK to check what was (not) written.
//
// - Build: tsc into a temp app folder (dist/ + copies of package.json and host.json + a link to node_modules),
//   ~5 s, every run: the child runs what the working tree compiles to, and the repo's dist/ and .data/ are never
//   used (the timer's statuses go under the temp folder's .data/).
// - Emulator: in this test process (startTestEmulator, in memory), so kill -9 of the dev host loses nothing.
// - Containers: what a user of a separate emulator does with the sample settings: COSMOS_ENSURE_CONTAINERS=true.
//   The dev host creates containers.json's containers only on its embedded emulator; here the app creates them on
//   its first request, and the Cosmos DB triggers, whose containers are missing when the host starts, come up
//   through the listener start retry (packages/devhost/src/listenerRetry.ts, as the Functions host's FunctionListener).
// - Short intervals through the app settings: feed poll 100 ms, lease renew/acquire 1 s, expiry 5 s (the
//   settings' minimum), request bodies ≤ 1024 bytes; but a subscription lock TTL of LOCK_TTL_S, not the fast 3 s.

const DATABASE = "cosmos-feed-app";
/**
 * The subscription lock's TTL here (LOCK_TTL_SECONDS): a request holds its lock until ttl − 1.5 s without a
 * renewal (packages/locks/src), which with 3 s a loaded machine outlasts (503 LockLost mid-request). 30 s keeps the
 * app's promise (a lapsed lock is never written under) and gives a request 28.5 s; the crash test's writers wait
 * out the killed requests' locks by retrying as the 409s tell them.
 */
const LOCK_TTL_S = 30;
const SETTINGS: Readonly<Record<string, string>> = {
  ...FAST_APP_SETTINGS,
  LOCK_TTL_SECONDS: String(LOCK_TTL_S),
};
const MAX_BODY = Number(SETTINGS.MAX_REQUEST_BODY_BYTES);

const scratch = mkdtempSync(join(tmpdir(), "cosmos-feed-e2e-"));
const appDir = join(scratch, "app");
const children: ChildProcess[] = [];
let emu: TestEmulator;
let host: AppChild;
let resources: Container;

function startHost(): Promise<AppChild> {
  return startAppChild({ appDir, connectionString: emu.emulator.connectionString, env: SETTINGS, children });
}

interface Answer {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field
  json: any;
}

async function call(
  method: string,
  path: string,
  init: {
    body?: unknown;
    raw?: string | ReadableStream<Uint8Array>;
    headers?: Record<string, string>;
    base?: string;
  } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  let body: string | ReadableStream<Uint8Array> | undefined = init.raw;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await fetch(`${init.base ?? host.baseUrl}${path}`, {
    method,
    headers,
    body,
    // A stream body (no Content-Length) needs half duplex.
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
    signal: AbortSignal.timeout(WAIT_MS),
  } as RequestInit);
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

const resourcePath = (sub: string, name: string) => `/api/subscriptions/${sub}/resources/${name}`;
const operationPath = (answer: Answer) =>
  new URL(answer.headers.get("azure-asyncoperation") as string).pathname;

/** The shared wait, polling again after a probe that throws, with the host's output in its failure. */
const until = <T>(what: string, probe: () => Promise<T | undefined>, ms = WAIT_MS): Promise<T> =>
  pollUntil(what, probe, { ms, retryErrors: true, detail: () => host.output() });

async function operationIdsOf(sub: string): Promise<string[]> {
  const { resources: ids } = await resources.items
    .query<string>({
      query: "SELECT VALUE c.operationId FROM c WHERE c.subscriptionId = @s AND c.docType = 'operation'",
      parameters: [{ name: "@s", value: sub }],
    })
    .fetchAll();
  return ids;
}

async function resourceNamesOf(sub: string): Promise<string[]> {
  const { resources: names } = await resources.items
    .query<string>(
      {
        query: "SELECT VALUE c.name FROM c WHERE c.subscriptionId = @s AND c.docType = 'resource'",
        parameters: [{ name: "@s", value: sub }],
      },
      { partitionKey: sub },
    )
    .fetchAll();
  return names;
}

/** Resources and operations share the resources container (an operation beside its resource, docs/app.md). */
async function countAll(docType: "resource" | "operation"): Promise<number> {
  const { resources: n } = await resources.items
    .query<number>({
      query: "SELECT VALUE COUNT(1) FROM c WHERE c.docType = @t",
      parameters: [{ name: "@t", value: docType }],
    })
    .fetchAll();
  return n[0] ?? 0;
}

beforeAll(async () => {
  [emu] = await Promise.all([startTestEmulator(), buildAppFolder(appDir)]);
  const database = emu.client.database(DATABASE);
  resources = database.container("resources");
  host = await startHost();
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await emu?.close();
  rmSync(scratch, { recursive: true, force: true });
});

describe("the app on a dev host child process, over HTTP", () => {
  it("starts on an empty account: the first request creates the containers, then the triggers start", async () => {
    // No container exists yet, so neither trigger could start with the host …
    for (const fn of ["reactToResources", "summarizeResources"]) {
      expect(host.output()).toContain(`The listener for function 'Functions.${fn}' was unable to start.`);
    }
    const health = await call("GET", "/api/health");
    expect(health.status).toBe(200);
    // … and both come up once COSMOS_ENSURE_CONTAINERS made them on that first request.
    await until("both listeners to start", async () =>
      ["reactToResources", "summarizeResources"].every((fn) =>
        host.output().includes(`Listener successfully started for function 'Functions.${fn}'`),
      )
        ? true
        : undefined,
    );
    expect(host.child.exitCode).toBeNull();
  });

  it("PUT → 201 + ETag + operation headers; the trigger's sighting is recorded as `observed`; the summary counts", async () => {
    const sub = "e2e-basic";
    const put = await call("PUT", resourcePath(sub, "Web1"), {
      body: { properties: { sku: "basic" }, tags: { team: "a" } },
    });
    expect(put.status).toBe(201);
    const etag = put.headers.get("etag");
    expect(etag).toBeTruthy();
    const opUrl = put.headers.get("azure-asyncoperation") as string;
    expect(opUrl).toMatch(new RegExp(`^${host.baseUrl}/api/subscriptions/${sub}/operations/[0-9a-f-]{36}$`));
    expect(put.headers.get("location")).toBe(opUrl);
    expect(put.json).toMatchObject({
      id: `/subscriptions/${sub}/resources/Web1`,
      name: "Web1",
      tags: { team: "a" },
      properties: { sku: "basic", nodeCount: 1, provisioningState: "Accepted" },
      etag,
    });

    const op = await call("GET", operationPath(put));
    expect(op.status).toBe(200);
    expect(op.json).toMatchObject({
      name: opUrl.split("/").pop(),
      status: "Accepted",
      operation: "Create",
      resourceId: `/subscriptions/${sub}/resources/Web1`,
    });
    // The reactions trigger's sighting, recorded by the orchestration's validate step.
    const observed = await until("the operation to record the trigger's sighting", async () => {
      const o = await call("GET", operationPath(put));
      return o.json.observed;
    });
    expect(observed).toMatchObject({ provisioningState: "Accepted", resourceEtag: etag });

    // The trigger started the provisioning orchestration: validate → provision → finalize, then Succeeded.
    const done = await until("the operation to succeed", async () => {
      const o = await call("GET", operationPath(put));
      return o.json.status === "Succeeded" ? o : undefined;
    });
    expect(done.json.orchestration).toMatchObject({ name: "provisioning", step: "done" });
    const got = await call("GET", resourcePath(sub, "web1")); // names are case-insensitive
    expect(got.status).toBe(200);
    expect(got.json).toEqual({
      ...put.json,
      properties: { ...put.json.properties, provisioningState: "Succeeded" },
      etag: got.headers.get("etag"),
    });

    await until("the summary to count the resource", async () => {
      const s = await call("GET", `/api/subscriptions/${sub}/summary`);
      return s.json.total === 1 && s.json.counts.Succeeded === 1 ? s : undefined;
    }).then((s) => expect(s.json.counts).toEqual({ Succeeded: 1 }));

    // The summary follows further changes: a second resource, then a DELETE (Deleting, observed as such).
    expect(
      (await call("PUT", resourcePath(sub, "web2"), { body: { properties: { sku: "premium" } } })).status,
    ).toBe(201);
    const del = await call("DELETE", resourcePath(sub, "Web1"));
    expect(del.status).toBe(202);
    const deleteObserved = await until("the DELETE to be observed", async () => {
      const o = await call("GET", operationPath(del));
      return o.json.observed;
    });
    expect(deleteObserved.provisioningState).toBe("Deleting");
    // The deprovisioning orchestration removes it; the delete operation succeeds.
    await until("the delete operation to succeed", async () => {
      const o = await call("GET", operationPath(del));
      return o.json.status === "Succeeded" ? o : undefined;
    });
    expect((await call("GET", resourcePath(sub, "Web1"))).status).toBe(404);
    const summary = await until("the summary to count web2 alone", async () => {
      const s = await call("GET", `/api/subscriptions/${sub}/summary`);
      return s.json.total === 1 && s.json.counts.Succeeded === 1 ? s : undefined;
    });
    expect(summary.json.counts).toEqual({ Succeeded: 1 });
  });

  it("50 concurrent PUTs on one subscription: serialized winners, the rest 409 + Retry-After, no lost or mixed write", async () => {
    const sub = "e2e-race";
    const names = ["hot-a", "hot-b", "hot-c"];
    const SKUS = ["basic", "standard", "premium"];
    // Every field says which request wrote it, so a mixed document cannot pass for one request's body.
    const bodyOf = (i: number) => ({
      properties: { sku: SKUS[i % 3], nodeCount: i + 1, description: `writer-${i}` },
      tags: { writer: String(i), name: names[i % names.length] },
    });
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call("PUT", resourcePath(sub, names[i % names.length]), { body: bodyOf(i) }).then((a) => ({ i, a })),
      ),
    );
    const winners = answers.filter(({ a }) => a.status === 201 || a.status === 200);
    const losers = answers.filter(({ a }) => a.status === 409);
    expect(winners.length + losers.length, JSON.stringify(answers.map(({ a }) => a.status))).toBe(50);
    expect(winners.length).toBeGreaterThanOrEqual(1);
    expect(losers.length).toBeGreaterThanOrEqual(1);
    for (const { a } of losers) {
      // The lock's refusal (an OCC conflict, which only overlapping winners could cause, has no Retry-After).
      expect(a.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
      expect(a.json.error.code).toBe("Conflict");
      expect(a.json.error.message).toMatch(`Another request is changing 'subscription-${sub}'`);
    }

    // Every winner's operation exists, and nothing else was written: the 409s left no operation.
    const ops = await Promise.all(
      winners.map(async ({ i, a }) => {
        const op = await call("GET", operationPath(a));
        expect(op.status).toBe(200);
        expect(op.json.resourceId).toBe(`/subscriptions/${sub}/resources/${names[i % names.length]}`);
        return { i, a, op: op.json as { name: string; operation: string; startTime: string } };
      }),
    );
    expect(new Set(await operationIdsOf(sub))).toEqual(new Set(ops.map((o) => o.op.name)));

    // Serialized: the operations started (under the lock) one after another — distinct, strictly ordered times.
    const byStart = [...ops].sort((x, y) => x.op.startTime.localeCompare(y.op.startTime));
    for (let k = 1; k < byStart.length; k++) {
      expect(Date.parse(byStart[k].op.startTime)).toBeGreaterThan(Date.parse(byStart[k - 1].op.startTime));
    }
    // Per name, in lock order: one Create (201), then Replaces (200); the stored resource is exactly the last
    // winner's body with its ETag, created at the first winner's time.
    for (const name of names) {
      const mine = byStart.filter(({ i }) => names[i % names.length] === name);
      const got = await call("GET", resourcePath(sub, name));
      if (mine.length === 0) {
        expect(got.status).toBe(404);
        continue;
      }
      expect(mine.map(({ a }) => a.status)).toEqual([201, ...mine.slice(1).map(() => 200)]);
      expect(mine.map(({ op }) => op.operation)).toEqual(["Create", ...mine.slice(1).map(() => "Replace")]);
      const last = mine[mine.length - 1];
      expect(got.status).toBe(200);
      // The stored resource is exactly the last winner's body (its provisioning state is the orchestration's).
      expect(got.json.tags).toEqual(bodyOf(last.i).tags);
      const { provisioningState: _state, ...properties } = got.json.properties;
      expect(properties).toEqual(bodyOf(last.i).properties);
      expect(got.json.systemData).toEqual({
        createdAt: mine[0].op.startTime,
        lastModifiedAt: last.op.startTime,
      });
    }
    expect((await resourceNamesOf(sub)).sort()).toEqual(
      names.filter((n) => byStart.some(({ i }) => names[i % names.length] === n)),
    );
  });

  it("a stale If-Match → 412 and nothing written; If-None-Match: * on an existing resource → 412", async () => {
    const sub = "e2e-conditions";
    const created = await call("PUT", resourcePath(sub, "db1"), { body: { properties: { sku: "basic" } } });
    expect(created.status).toBe(201);
    const stale = created.headers.get("etag") as string;
    // The create's orchestration writes the resource too (Accepted → Provisioning → Succeeded), each write a new
    // ETag: a replace conditioned on the ETag just read can lose that race, so it reads again and retries (a lost
    // one is a 412 that writes nothing, counted by the operations below).
    let replaced = await call("PUT", resourcePath(sub, "db1"), {
      body: { properties: { sku: "standard", nodeCount: 2 } },
      headers: { "if-match": stale },
    });
    for (let tries = 1; replaced.status === 412 && tries < 10; tries++) {
      const read = await call("GET", resourcePath(sub, "db1"));
      replaced = await call("PUT", resourcePath(sub, "db1"), {
        body: { properties: { sku: "standard", nodeCount: 2 } },
        headers: { "if-match": read.headers.get("etag") as string },
      });
    }
    expect(replaced.status).toBe(200);
    const current = replaced.headers.get("etag") as string;
    expect(current).not.toBe(stale);
    const opsBefore = (await operationIdsOf(sub)).length;
    expect(opsBefore).toBe(2);

    const refusals = [
      await call("PUT", resourcePath(sub, "db1"), {
        body: { properties: { sku: "premium", nodeCount: 9 } },
        headers: { "if-match": stale },
      }),
      await call("PATCH", resourcePath(sub, "db1"), {
        body: { properties: { nodeCount: 9 } },
        headers: { "if-match": stale, "content-type": "application/merge-patch+json" },
      }),
      await call("PUT", resourcePath(sub, "db1"), {
        body: { properties: { sku: "premium", nodeCount: 9 } },
        headers: { "if-none-match": "*" },
      }),
      await call("PUT", resourcePath(sub, "missing"), {
        body: { properties: { sku: "premium" } },
        headers: { "if-match": "*" },
      }),
    ];
    for (const r of refusals) {
      expect(r.status).toBe(412);
      expect(r.json.error.code).toBe("PreconditionFailed");
    }
    const after = await call("GET", resourcePath(sub, "db1"));
    const { provisioningState: _state, ...properties } = after.json.properties;
    expect(properties).toEqual({ sku: "standard", nodeCount: 2 });
    expect((await call("GET", resourcePath(sub, "missing"))).status).toBe(404);
    expect((await operationIdsOf(sub)).length).toBe(opsBefore);
  });

  it("the bad-input list → 400 with the documented code each, and nothing written", async () => {
    const sub = "e2e-bad";
    const ok = { properties: { sku: "basic" } };
    const json = { "content-type": "application/json" };
    const [resourcesBefore, operationsBefore] = await Promise.all([
      countAll("resource"),
      countAll("operation"),
    ]);
    const oversize = JSON.stringify({ properties: { sku: "basic", description: "x".repeat(MAX_BODY) } });
    const cases: [string, Promise<Answer>, string][] = [
      [
        "malformed JSON",
        call("PUT", resourcePath(sub, "a"), { raw: '{"properties": ', headers: json }),
        "InvalidJson",
      ],
      ["a JSON array", call("PUT", resourcePath(sub, "a"), { raw: "[1]", headers: json }), "InvalidBody"],
      ["a JSON string", call("PUT", resourcePath(sub, "a"), { raw: '"x"', headers: json }), "InvalidBody"],
      ["empty body", call("PUT", resourcePath(sub, "a"), { raw: "", headers: json }), "MissingBody"],
      ["whitespace body", call("PUT", resourcePath(sub, "a"), { raw: " \n", headers: json }), "MissingBody"],
      ["no properties", call("PUT", resourcePath(sub, "a"), { body: { tags: {} } }), "InvalidBody"],
      [
        "nodeCount as a string",
        call("PUT", resourcePath(sub, "a"), { body: { properties: { sku: "basic", nodeCount: "3" } } }),
        "InvalidBody",
      ],
      [
        "nodeCount out of range",
        call("PUT", resourcePath(sub, "a"), { body: { properties: { sku: "basic", nodeCount: 101 } } }),
        "InvalidBody",
      ],
      [
        "sku a number",
        call("PUT", resourcePath(sub, "a"), { body: { properties: { sku: 5 } } }),
        "InvalidBody",
      ],
      ["tags an array", call("PUT", resourcePath(sub, "a"), { body: { ...ok, tags: ["x"] } }), "InvalidBody"],
      [
        "a tag value a number",
        call("PUT", resourcePath(sub, "a"), { body: { ...ok, tags: { team: 1 } } }),
        "InvalidBody",
      ],
      [
        "unknown top field",
        call("PUT", resourcePath(sub, "a"), { body: { ...ok, location: "x" } }),
        "UnknownField",
      ],
      [
        "unknown property",
        call("PUT", resourcePath(sub, "a"), { body: { properties: { sku: "basic", size: 3 } } }),
        "UnknownField",
      ],
      [
        "PATCH unknown property",
        call("PATCH", resourcePath(sub, "a"), { body: { properties: { size: 3 } } }),
        "UnknownField",
      ],
      [
        "subscription with '_'",
        call("PUT", resourcePath("bad_sub", "a"), { body: ok }),
        "InvalidSubscriptionId",
      ],
      [
        "subscription of 65 characters",
        call("PUT", resourcePath("s".repeat(65), "a"), { body: ok }),
        "InvalidSubscriptionId",
      ],
      ["name starting with '-'", call("PUT", resourcePath(sub, "-a"), { body: ok }), "InvalidResourceName"],
      ["name ending with '.'", call("PUT", resourcePath(sub, "a."), { body: ok }), "InvalidResourceName"],
      [
        "name of 64 characters",
        call("PUT", resourcePath(sub, "n".repeat(64)), { body: ok }),
        "InvalidResourceName",
      ],
      ["name with '~'", call("PUT", resourcePath(sub, "a~b"), { body: ok }), "InvalidResourceName"],
      [
        `body over ${MAX_BODY} bytes (Content-Length)`,
        call("PUT", resourcePath(sub, "a"), { raw: oversize, headers: json }),
        "BodyTooLarge",
      ],
      [
        `body over ${MAX_BODY} bytes (chunked, no Content-Length)`,
        call("PUT", resourcePath(sub, "a"), {
          raw: new ReadableStream({
            start(controller) {
              controller.enqueue(new TextEncoder().encode(oversize));
              controller.close();
            },
          }),
          headers: json,
        }),
        "BodyTooLarge",
      ],
      [
        "If-None-Match other than *",
        call("PUT", resourcePath(sub, "a"), { body: ok, headers: { "if-none-match": '"etag"' } }),
        "InvalidHeader",
      ],
      [
        "If-Match and If-None-Match",
        call("PUT", resourcePath(sub, "a"), { body: ok, headers: { "if-match": "*", "if-none-match": "*" } }),
        "InvalidHeader",
      ],
      ["$top=0", call("GET", `/api/subscriptions/${sub}/resources?$top=0`), "InvalidTop"],
      ["$top=1001", call("GET", `/api/subscriptions/${sub}/resources?$top=1001`), "InvalidTop"],
      ["$top=abc", call("GET", `/api/subscriptions/${sub}/resources?$top=abc`), "InvalidTop"],
      ["$top=1.5", call("GET", `/api/subscriptions/${sub}/resources?$top=1.5`), "InvalidTop"],
      [
        "$skipToken not ours",
        call("GET", `/api/subscriptions/${sub}/resources?$skipToken=bm90LWEtdG9rZW4`),
        "InvalidSkipToken",
      ],
      [
        "list: bad subscription",
        call("GET", "/api/subscriptions/bad_sub/resources"),
        "InvalidSubscriptionId",
      ],
      [
        "summary: bad subscription",
        call("GET", "/api/subscriptions/bad_sub/summary"),
        "InvalidSubscriptionId",
      ],
      [
        "operation id not a UUID",
        call("GET", `/api/subscriptions/${sub}/operations/not-a-uuid`),
        "InvalidOperationId",
      ],
    ];
    const answers = await Promise.all(cases.map(([, p]) => p));
    const seen = cases.map(([what, , code], k) => ({
      what,
      code,
      status: answers[k].status,
      got: answers[k].json,
    }));
    for (const s of seen) {
      expect({ what: s.what, status: s.status, code: s.got?.error?.code }).toEqual({
        what: s.what,
        status: 400,
        code: s.code,
      });
      expect(typeof s.got.error.message).toBe("string");
    }
    expect((await call("GET", resourcePath(sub, "a"))).status).toBe(404);
    expect(await Promise.all([countAll("resource"), countAll("operation")])).toEqual([
      resourcesBefore,
      operationsBefore,
    ]);
    expect(host.child.exitCode).toBeNull();
  });

  it("kill -9 of the dev host while changes flow, then a restart: every acknowledged write is observed, the summaries are right", async () => {
    const steady = ["e2e-crash-a", "e2e-crash-b", "e2e-crash-c"];
    const burst = Array.from({ length: 30 }, (_, k) => `e2e-burst-${k}`);
    const acked: { sub: string; name: string; opId: string; etag: string }[] = [];
    const failures: string[] = [];
    const first = host;

    /** One PUT of a new resource; true when acknowledged (201), false when the host died under it. */
    const create = async (base: string, sub: string, name: string): Promise<boolean> => {
      for (;;) {
        let a: Answer;
        try {
          a = await call("PUT", resourcePath(sub, name), { body: { properties: { sku: "basic" } }, base });
        } catch {
          return false; // unacknowledged: it may or may not have been written
        }
        if (a.status === 201) {
          const opId = (a.headers.get("azure-asyncoperation") as string).split("/").pop() as string;
          acked.push({ sub, name, opId, etag: a.headers.get("etag") as string });
          return true;
        }
        // Retry as docs/app.md tells a client to: a held lock (after the crash: the killed request's, until its
        // LOCK_TTL_S) is a 409, a lock lost under load before the write (nothing written) a 503 LockLost, both
        // with Retry-After.
        if ((a.status !== 409 && a.status !== 503) || !a.headers.get("retry-after")) {
          failures.push(`${sub}/${name}: ${a.status} ${JSON.stringify(a.json)}`);
          return false;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    // Sequential writers, one per subscription, a new resource per PUT (so each acknowledged operation is its
    // resource's latest and must be observed); they stop when the host stops answering or `done()`.
    const writers = (base: string, from: number, done: () => boolean) =>
      Promise.all(
        steady.map(async (sub) => {
          for (let n = from; !done() && (await create(base, sub, `r-${n}`)); n++);
        }),
      );
    const observedIds = async () => {
      const { resources: ids } = await resources.items
        .query<string>(
          "SELECT VALUE c.operationId FROM c WHERE c.docType = 'operation' AND IS_DEFINED(c.observed)",
        )
        .fetchAll();
      return new Set(ids);
    };

    const flowing = writers(first.baseUrl, 0, () => false);
    // The trigger is working through the stream of changes …
    await until("the trigger to observe the steady writes", async () => {
      const seen = await observedIds();
      return acked.length >= 20 && acked.some((w) => seen.has(w.opId)) ? true : undefined;
    });
    // … when a burst lands on 30 subscriptions at once, and the host is killed amid its acknowledgements: the
    // trigger cannot have reacted to all of them yet.
    let burstAcks = 0;
    await Promise.all(
      burst.map(async (sub) => {
        if ((await create(first.baseUrl, sub, "b-0")) && ++burstAcks === 20) first.child.kill("SIGKILL");
      }),
    );
    await flowing;
    expect(failures).toEqual([]);
    expect(burstAcks).toBeGreaterThanOrEqual(20);
    expect(await first.exited).toBe("SIGKILL");
    const ackedBeforeKill = acked.length;
    const seenAtKill = await observedIds();
    const pendingAtKill = acked.filter((w) => !seenAtKill.has(w.opId));
    // Usually some acknowledged writes are not yet observed at the kill; on a loaded machine the trigger can keep up
    // with the slowed HTTP side and none is (a CI run saw 0). What is asserted below holds either way.
    console.log(`kill -9: ${pendingAtKill.length} of ${acked.length} acknowledged writes not yet observed`);

    host = await startHost();
    expect(host.output()).not.toContain("was unable to start");
    await writers(host.baseUrl, 1_000, () => acked.length >= ackedBeforeKill + 15);
    expect(failures).toEqual([]);

    // No change missed: every acknowledged write's operation gets `observed`, with the ETag the client got.
    await until("every acknowledged write to be observed", async () => {
      const { resources: seen } = await resources.items
        .query<{ id: string; etag: string }>(
          "SELECT c.operationId AS id, c.observed.resourceEtag AS etag FROM c WHERE c.docType = 'operation' AND IS_DEFINED(c.observed)",
        )
        .fetchAll();
      const etags = new Map(seen.map((o) => [o.id, o.etag]));
      return acked.every((w) => etags.get(w.opId) === w.etag) ? true : undefined;
    });
    // The summaries count what is stored: the acknowledged writes, and any the kill cut off after it landed.
    for (const sub of [...steady, ...burst]) {
      const stored = (await resourceNamesOf(sub)).length;
      expect(stored).toBeGreaterThanOrEqual(acked.filter((w) => w.sub === sub).length);
      if (stored === 0) continue; // a burst PUT that the kill cut off before it wrote anything
      const summary = await until(`the summary of ${sub}`, async () => {
        const s = await call("GET", `/api/subscriptions/${sub}/summary`);
        return s.json.total === stored && s.json.counts.Succeeded === stored ? s : undefined;
      });
      expect(summary.json.counts).toEqual({ Succeeded: stored });
    }
    // Every acknowledged write's orchestration completed, across the kill: its operation Succeeded.
    const { resources: statuses } = await resources.items
      .query<{ id: string; status: string }>(
        "SELECT c.operationId AS id, c.status FROM c WHERE c.docType = 'operation'",
      )
      .fetchAll();
    const byId = new Map(statuses.map((o) => [o.id, o.status]));
    expect(acked.filter((w) => byId.get(w.opId) !== "Succeeded")).toEqual([]);
    // … each by exactly one orchestration instance, though changes were redelivered across the kill.
    for (const w of acked.slice(0, 25)) {
      const list = await call(
        "GET",
        `/runtime/webhooks/durabletask/instances?instanceIdPrefix=provisioning-${w.opId}`,
      );
      expect((list.json as unknown[]).length).toBe(1);
    }
  });
});
