import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type RunningDevHost, startDevHost } from "../../packages/devhost/src/index.js";

/**
 * A small CommonJS v4 app for the front door tests (test/devhost/front-door-*.test.ts), written to a scratch folder:
 * - `echo` (GET, POST, PUT, DELETE): `{method, bytes}` of the body it was given;
 * - `count?key=k`: counts how many invocations with that key run at once inside the app (it yields to the event loop
 *   once while counted, so invocations started together overlap) and answers `{max, calls}` so far for the key;
 * - `gate`: calls the app setting GATE_URL (a test's server that holds each call until the test lets it go), so the
 *   test sees exactly how many invocations are running.
 * The counts live in the app, not the test, so they hold wherever the dev host runs the app.
 */

const scratch = fileURLToPath(new URL("../../.data/test-apps", import.meta.url));

const INDEX = `const { app } = require("@azure/functions");
app.http("echo", {
  methods: ["GET", "POST", "PUT", "DELETE"],
  handler: async (req) => {
    const body = Buffer.from(await req.arrayBuffer());
    return { jsonBody: { method: req.method, bytes: body.length } };
  },
});
const counts = new Map();
app.http("count", {
  methods: ["GET", "POST"],
  handler: async (req) => {
    const key = req.query.get("key") ?? "";
    const c = counts.get(key) ?? { running: 0, max: 0, calls: 0 };
    counts.set(key, c);
    c.running++;
    c.calls++;
    c.max = Math.max(c.max, c.running);
    await new Promise((resolve) => setImmediate(resolve));
    c.running--;
    return { jsonBody: { max: c.max, calls: c.calls } };
  },
});
app.http("gate", {
  methods: ["GET"],
  handler: async () => {
    const res = await fetch(process.env.GATE_URL);
    return { body: await res.text() };
  },
});
`;

export interface FrontDoorApp {
  dir: string;
  remove(): void;
}

export function frontDoorApp(
  options: { hostJson?: object; values?: Record<string, string>; host?: Record<string, unknown> } = {},
): FrontDoorApp {
  mkdirSync(scratch, { recursive: true });
  const dir = mkdtempSync(join(scratch, "front-door-"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ main: "index.js" }));
  writeFileSync(join(dir, "index.js"), INDEX);
  writeFileSync(join(dir, "host.json"), JSON.stringify({ version: "2.0", ...options.hostJson }));
  writeFileSync(
    join(dir, "local.settings.json"),
    JSON.stringify({ IsEncrypted: false, Values: options.values ?? {}, Host: options.host ?? {} }),
  );
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Registers the front door tests' lifecycle in the calling test file: each test's dev hosts close after it (and the
 * app settings they put into process.env are taken out again, so that the next test's apply), the scratch apps go
 * after the file. Returns `serve`, which starts a dev host on a new {@link frontDoorApp}.
 */
export function frontDoorHosts(hooks: {
  afterEach: (fn: () => Promise<void>) => void;
  afterAll: (fn: () => void) => void;
}) {
  const apps: FrontDoorApp[] = [];
  const hosts: RunningDevHost[] = [];
  // The dev host runs the app in this process and puts local.settings.json Values into process.env (the real
  // environment wins there).
  const savedEnv = { ...process.env };
  hooks.afterEach(async () => {
    while (hosts.length) await hosts.pop()?.close();
    for (const name of Object.keys(process.env)) if (!(name in savedEnv)) delete process.env[name];
  });
  hooks.afterAll(() => {
    for (const a of apps) a.remove();
  });
  return async function serve(
    options: Parameters<typeof frontDoorApp>[0] = {},
    extra: Partial<Parameters<typeof startDevHost>[0]> = {},
  ): Promise<RunningDevHost> {
    const app = frontDoorApp(options);
    apps.push(app);
    const host = await startDevHost({ appDir: app.dir, port: 0, logSink: () => {}, ...extra });
    hosts.push(host);
    return host;
  };
}
