/**
 * HTTPS and HTTP on one port (what `cosmos-feed start` serves): the SDK over https:// trusting the generated
 * certificate, and over http:// on the same port, see the same account; each is told locations of its own scheme;
 * a connection that never sends a byte does not keep close() waiting.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { Agent } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CosmosClient } from "@azure/cosmos";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEmulator, startEmulator } from "../../packages/emulator/src/index.js";
import { ensureCertificate } from "../../packages/emulator/src/tls/certificate.js";

const dir = mkdtempSync(join(tmpdir(), "emu-dual-"));
let emu: RunningEmulator;
const clients: CosmosClient[] = [];
const client = (endpoint: string, agent?: Agent) => {
  const c = new CosmosClient({ endpoint, key: emu.key, ...(agent ? { agent } : {}) });
  clients.push(c);
  return c;
};

beforeAll(async () => {
  const { certFile, keyFile } = ensureCertificate(dir);
  emu = await startEmulator({ port: 0, tls: { certFile, keyFile, http: true } });
});
afterAll(async () => {
  for (const c of clients) c.dispose();
  await emu.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("HTTPS and HTTP on one port", () => {
  it("serves the SDK over both: https with the certificate trusted, http unchanged", async () => {
    expect(emu.endpoint).toBe(`https://127.0.0.1:${emu.port}/`);
    expect(emu.tls?.http).toBe(true);
    // An agent of the app's own (keep-alive, a proxy …): over http:// the SDK refuses it, over https:// it works.
    const secure = client(emu.endpoint, new Agent({ keepAlive: true, ca: emu.tls?.certPem }));
    const { database } = await secure.databases.create({ id: "dual" });
    const { container } = await database.containers.create({ id: "c", partitionKey: "/pk" });
    await container.items.create({ id: "a", pk: "x" });
    const plain = client(`http://127.0.0.1:${emu.port}/`);
    const read = await plain.database("dual").container("c").item("a", "x").read();
    expect(read.statusCode).toBe(200);
    const untrusted = client(emu.endpoint, new Agent({ keepAlive: false }));
    await expect(untrusted.databases.readAll().fetchAll()).rejects.toMatchObject({
      code: "DEPTH_ZERO_SELF_SIGNED_CERT",
    });
  });

  it("tells each client the account's locations in the scheme it came in with", async () => {
    const secure = client(`https://localhost:${emu.port}/`, new Agent({ ca: emu.tls?.certPem }));
    const overTls = await secure.getDatabaseAccount();
    expect(overTls.resource?.writableLocations[0].databaseAccountEndpoint).toBe(
      `https://localhost:${emu.port}/`,
    );
    const overHttp = await client(`http://127.0.0.1:${emu.port}/`).getDatabaseAccount();
    expect(overHttp.resource?.writableLocations[0].databaseAccountEndpoint).toBe(
      `http://127.0.0.1:${emu.port}/`,
    );
  });

  it("close() ends a connection that has not sent its first byte", async () => {
    const other = await startEmulator({
      port: 0,
      tls: { certFile: join(dir, "emulator-cert.pem"), keyFile: join(dir, "emulator-key.pem"), http: true },
    });
    const silent = connect({ host: "127.0.0.1", port: other.port });
    await new Promise<void>((r) => silent.once("connect", () => r()));
    const closedByServer = new Promise<void>((r) => silent.once("close", () => r()));
    await other.close();
    await closedByServer;
    expect(silent.destroyed).toBe(true);
  });
});
