/**
 * The real-host path's scripts: `npm run azurite` (Azurite 3.35, what UseDevelopmentStorage=true names) answers as
 * Azure Storage does on its blob, queue and table endpoints — checked with requests signed with the well-known
 * devstoreaccount1 key (Azurite verifies the signature) — and `npm run start:func` says in one line what to install
 * when Core Tools is missing.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHmac } from "node:crypto";
import { cpSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../../bench/lib/app-child.js";
import { WAIT_MS } from "../../bench/lib/until.js";

const ACCOUNT = "devstoreaccount1";
// Azurite's published development key (the same in every Azurite; not a secret).
const KEY = Buffer.from(
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
  "base64",
);
const VERSION = "2021-12-02";

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Blob and queue SharedKey: the full string-to-sign (path-style URL: the account appears twice). */
function sharedKey(method: string, url: URL, headers: Record<string, string>): string {
  const canonHeaders = Object.keys(headers)
    .filter((h) => h.startsWith("x-ms-"))
    .sort()
    .map((h) => `${h}:${headers[h]}\n`)
    .join("");
  const params = [...url.searchParams.keys()]
    .sort()
    .map((k) => `\n${k}:${url.searchParams.get(k)}`)
    .join("");
  const resource = `/${ACCOUNT}${url.pathname}${params}`;
  const toSign =
    [method, "", "", "", "", "", "", "", "", "", "", ""].join("\n") + `\n${canonHeaders}${resource}`;
  return `SharedKey ${ACCOUNT}:${createHmac("sha256", KEY).update(toSign, "utf8").digest("base64")}`;
}

/** Table SharedKeyLite: date + canonicalized resource. */
function sharedKeyLite(url: URL, date: string): string {
  const toSign = `${date}\n/${ACCOUNT}${url.pathname}`;
  return `SharedKeyLite ${ACCOUNT}:${createHmac("sha256", KEY).update(toSign, "utf8").digest("base64")}`;
}

let azurite: ChildProcess;
let location: string;
const ports = { blob: 0, queue: 0, table: 0 };

beforeAll(async () => {
  location = mkdtempSync(join(tmpdir(), "azurite-"));
  ports.blob = await freePort();
  ports.queue = await freePort();
  ports.table = await freePort();
  // The script as package.json defines it, with the test's own ports and data folder.
  const script = (
    JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { scripts: Record<string, string> }
  ).scripts.azurite;
  expect(script).toContain("--location .data/azurite");
  const args = script
    .split(" ")
    .slice(1)
    .map((a) => (a === ".data/azurite" ? location : a));
  azurite = spawn(
    process.execPath,
    [
      join(repoRoot, "node_modules/azurite/dist/src/azurite.js"),
      ...args,
      "--blobPort",
      String(ports.blob),
      "--queuePort",
      String(ports.queue),
      "--tablePort",
      String(ports.table),
    ],
    { cwd: repoRoot, stdio: "pipe" },
  );
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await fetch(`http://127.0.0.1:${ports.table}/`);
      await fetch(`http://127.0.0.1:${ports.blob}/`);
      await fetch(`http://127.0.0.1:${ports.queue}/`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error("azurite did not start");
      await new Promise((r) => setTimeout(r, 100));
    }
  }
});

afterAll(() => {
  azurite?.kill("SIGKILL");
  if (location) rmSync(location, { recursive: true, force: true });
});

describe("npm run azurite", () => {
  it("blob: a signed request lists containers; a wrong key is refused", async () => {
    const url = new URL(`http://127.0.0.1:${ports.blob}/${ACCOUNT}?comp=list`);
    const headers = { "x-ms-date": new Date().toUTCString(), "x-ms-version": VERSION };
    const res = await fetch(url, { headers: { ...headers, authorization: sharedKey("GET", url, headers) } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("<EnumerationResults");
    const forged = await fetch(url, { headers: { ...headers, authorization: `SharedKey ${ACCOUNT}:AAAA` } });
    expect(forged.status).toBe(403);
  });

  it("queue: a signed request lists queues", async () => {
    const url = new URL(`http://127.0.0.1:${ports.queue}/${ACCOUNT}?comp=list`);
    const headers = { "x-ms-date": new Date().toUTCString(), "x-ms-version": VERSION };
    const res = await fetch(url, { headers: { ...headers, authorization: sharedKey("GET", url, headers) } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("<EnumerationResults");
  });

  it("table: a signed request queries tables", async () => {
    const url = new URL(`http://127.0.0.1:${ports.table}/${ACCOUNT}/Tables`);
    const date = new Date().toUTCString();
    const res = await fetch(url, {
      headers: {
        "x-ms-date": date,
        "x-ms-version": "2019-02-02",
        accept: "application/json;odata=nometadata",
        authorization: sharedKeyLite(url, date),
      },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ value: [] });
  });
});

describe("npm run start:func", () => {
  it("without Core Tools on PATH: one clear line and exit 1", async () => {
    const run = promisify(execFile)(process.execPath, [join(repoRoot, "scripts/start-func.mjs")], {
      cwd: repoRoot,
      env: { ...process.env, PATH: "/nonexistent" },
    });
    const err = (await run.catch((e: unknown) => e)) as { code: number; stderr: string };
    expect(err.code).toBe(1);
    const lines = err.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("azure-functions-core-tools@4");
    expect(lines[0]).toContain("npm start");
  });
});

describe("npm run infra:build", () => {
  it("without the .NET SDK or the Azure CLI on PATH: one clear line naming both, and exit 1", async () => {
    // The scripts run from a copy of their folder: the checkout's own .data/tools may hold a Bicep that
    // `npm run test:infra` restored, which infra:build would then use without the .NET SDK.
    const root = mkdtempSync(join(tmpdir(), "infra-build-"));
    for (const file of ["infra-build.mjs", "bicep.mjs", "bicep-restore/bicep-restore.csproj"])
      cpSync(join(repoRoot, "scripts", file), join(root, "scripts", file));
    const run = promisify(execFile)(process.execPath, [join(root, "scripts/infra-build.mjs")], {
      cwd: root,
      env: { ...process.env, PATH: "/nonexistent" },
    });
    const err = (await run.catch((e: unknown) => e)) as { code: number; stderr: string };
    rmSync(root, { recursive: true, force: true });
    expect(err.code).toBe(1);
    const lines = err.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("Azure CLI");
    expect(lines[0]).toContain(".NET SDK");
    expect(lines[0]).toMatch(/^infra:build: Bicep \d+\.\d+\.\d+ comes from NuGet/);
  });
});
