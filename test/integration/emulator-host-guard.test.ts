/**
 * The emulator's DNS-rebinding guard: a page whose name was rebound to 127.0.0.1 sends its own name as Host, and
 * with the published emulator key could otherwise read the task hub's documents and create databases. Such a
 * request gets 421 (code HostNotAllowed) and reads or writes nothing; the SDK's own traffic (Host 127.0.0.1:port
 * or localhost:port) and listed names are answered.
 */
import { request } from "node:http";
import { networkInterfaces } from "node:os";
import { CosmosClient } from "@azure/cosmos";
import { afterEach, describe, expect, it } from "vitest";
import { masterKeyHeaders } from "../../packages/emulator/src/auth.js";
import {
  EmulatorStartError,
  type RunningEmulator,
  startEmulator,
} from "../../packages/emulator/src/index.js";

interface Answer {
  status: number;
  body: { code?: string; message?: string; Databases?: { id: string }[] };
}

/** A request signed with the emulator key (as a page knowing the published key would sign it), with this Host. */
function signed(
  emu: RunningEmulator,
  method: string,
  path: string,
  host: string,
  body?: unknown,
): Promise<Answer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: emu.port,
        method,
        path,
        headers: {
          ...masterKeyHeaders(emu.key, method, path),
          host,
          ...(payload
            ? { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        let text = "";
        res.on("data", (d) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

const started: RunningEmulator[] = [];
async function emulator(options: Parameters<typeof startEmulator>[0] = {}): Promise<RunningEmulator> {
  const emu = await startEmulator({ port: 0, ...options });
  started.push(emu);
  return emu;
}
afterEach(async () => {
  for (const emu of started.splice(0)) await emu.close();
});

const databaseIds = async (emu: RunningEmulator) =>
  ((await signed(emu, "GET", "/dbs", `127.0.0.1:${emu.port}`)).body.Databases ?? []).map((d) => d.id);

describe("the emulator's Host guard", () => {
  it("refuses a foreign Host with 421 HostNotAllowed: nothing is created, nothing read", async () => {
    const emu = await emulator();
    const create = await signed(emu, "POST", "/dbs", `evil.example:${emu.port}`, { id: "rebound" });
    expect(create.status).toBe(421);
    expect(create.body.code).toBe("HostNotAllowed");
    expect(create.body.message).toContain("'evil.example'");
    expect(create.body.message).toContain("--allowed-hosts");
    expect(await databaseIds(emu)).toEqual([]);

    expect((await signed(emu, "POST", "/dbs", `127.0.0.1:${emu.port}`, { id: "hub" })).status).toBe(201);
    const read = await signed(emu, "GET", "/dbs", "evil.example");
    expect(read.status).toBe(421);
    expect(read.body.Databases).toBeUndefined();
    // A name that only looks local, and a malformed Host, are refused too.
    expect((await signed(emu, "GET", "/dbs", `127.0.0.1.evil.example:${emu.port}`)).status).toBe(421);
    expect((await signed(emu, "GET", "/dbs", "a b")).status).toBe(400);
  });

  it("answers the SDK under 127.0.0.1, localhost and [::1]-style names", async () => {
    const emu = await emulator();
    for (const host of ["127.0.0.1", "localhost"]) {
      const client = new CosmosClient({ endpoint: `http://${host}:${emu.port}/`, key: emu.key });
      await client.databases.createIfNotExists({ id: `via-${host}` });
      client.dispose();
    }
    expect((await signed(emu, "GET", "/dbs", `[::1]:${emu.port}`)).status).toBe(200);
    expect((await signed(emu, "GET", "/dbs", `app.localhost:${emu.port}`)).status).toBe(200);
    expect((await databaseIds(emu)).sort()).toEqual(["via-127.0.0.1", "via-localhost"]);
  });

  it("answers names of the allow-list (a container's service name, a domain), and everything with '*'", async () => {
    const emu = await emulator({ allowedHosts: "cosmos, *.dev.internal" });
    expect((await signed(emu, "GET", "/dbs", `cosmos:${emu.port}`)).status).toBe(200);
    expect((await signed(emu, "GET", "/dbs", `db.dev.internal:${emu.port}`)).status).toBe(200);
    const other = await signed(emu, "GET", "/dbs", `evil.example:${emu.port}`);
    expect(other.status).toBe(421);
    expect(other.body.message).toContain("cosmos, *.dev.internal");
    const open = await emulator({ allowedHosts: "*" });
    expect((await signed(open, "GET", "/dbs", `evil.example:${open.port}`)).status).toBe(200);
  });

  it("bound to 0.0.0.0, answers the machine's own interface addresses", async () => {
    const address = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .find((i) => i.family === "IPv4" && !i.internal)?.address;
    const emu = await emulator({ host: "0.0.0.0" });
    expect((await signed(emu, "GET", "/dbs", `127.0.0.1:${emu.port}`)).status).toBe(200);
    if (address) expect((await signed(emu, "GET", "/dbs", `${address}:${emu.port}`)).status).toBe(200);
    expect((await signed(emu, "GET", "/dbs", `evil.example:${emu.port}`)).status).toBe(421);
  });

  it("a malformed allow-list entry is a start error naming it, not a guard that lets everything in", async () => {
    const failure = await startEmulator({ port: 0, allowedHosts: "cosmos:8081" }).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(EmulatorStartError);
    expect((failure as EmulatorStartError).code).toBe("INVALID_OPTION");
    expect((failure as Error).message).toContain("'cosmos:8081'");
  });
});
