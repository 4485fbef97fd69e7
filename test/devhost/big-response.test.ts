import { createHash } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { settled, waitUntil } from "../../bench/lib/until.js";
import { startDevHost } from "../../packages/devhost/src/index.js";
import type { ProcessWorker } from "../../packages/devhost/src/worker/process-worker.js";
import { openSocket } from "../support/raw-http.js";
import { scratchApps } from "../support/scratch-apps.js";

// A large HTTP response crosses from the worker process in pieces, pulled as the client reads: a client that stops
// reading a 64 MB answer holds neither the worker channel (other functions answer meanwhile) nor the whole body in
// the dev host. Judged by order and counts (pieces, bytes, a digest), never by time.

const apps = scratchApps("big-response-");
afterAll(() => apps.removeAll());

const SIZE = 64 * 1024 * 1024;
const APP = `
import { app } from "@azure/functions";
const big = Buffer.alloc(${SIZE});
for (let i = 0; i < big.length; i++) big[i] = i % 251;
app.http("big", { handler: async () => ({ body: big }) });
app.http("small", { handler: async () => ({ body: "small" }) });
`;

function expectedDigest(): string {
  const big = Buffer.alloc(SIZE);
  for (let i = 0; i < big.length; i++) big[i] = i % 251;
  return createHash("sha256").update(big).digest("hex");
}

describe("a 64 MB response", () => {
  it("streams from the worker as the client reads it; other functions answer while it is held", async () => {
    const dir = apps.write({
      "package.json": JSON.stringify({ name: "b", type: "module", main: "index.js" }),
      "host.json": JSON.stringify({ version: "2.0" }),
      "index.js": APP,
    });
    const host = await startDevHost({ appDir: dir, port: 0, logSink: () => {} });
    try {
      const worker = host.app.worker as ProcessWorker;
      const socket = await openSocket(host.port);
      const hash = createHash("sha256");
      let head = "";
      let bodyBytes = 0;
      let inBody = false;
      socket.on("data", (chunk: Buffer) => {
        if (inBody) {
          bodyBytes += chunk.length;
          hash.update(chunk);
          return;
        }
        head += chunk.toString("latin1");
        const end = head.indexOf("\r\n\r\n");
        if (end < 0) return;
        inBody = true;
        const rest = chunk.subarray(chunk.length - (head.length - end - 4));
        head = head.slice(0, end);
        bodyBytes += rest.length;
        hash.update(rest);
        socket.pause(); // the client stops reading
      });
      const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
      socket.write("GET /api/big HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n");
      await waitUntil("the big answer's head", () => inBody);
      expect(head).toMatch(/^HTTP\/1\.1 200 /);
      expect(head.toLowerCase()).toContain(`content-length: ${SIZE}`);

      // While the client reads nothing more, the other function answers, again and again.
      for (let i = 0; i < 20; i++) {
        const res = await settled("a small answer", fetch(`${host.baseUrl}/api/small`));
        expect(await res.text()).toBe("small");
      }
      // Only what the sockets' buffers took crossed from the worker: not the 64 pieces of 1 MiB.
      const piecesWhileHeld = worker.bodyPiecesReceived;
      expect(piecesWhileHeld).toBeGreaterThan(0);
      expect(piecesWhileHeld).toBeLessThan(64);
      expect(bodyBytes).toBeLessThan(SIZE);

      socket.resume();
      await settled("the big answer read to its end", closed);
      expect(bodyBytes).toBe(SIZE);
      expect(hash.digest("hex")).toBe(expectedDigest());
      expect(worker.bodyPiecesReceived).toBe(64);
    } finally {
      await host.close();
    }
  });
});
