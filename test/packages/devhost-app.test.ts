// Scenario 1 (issue 33): an existing Azure Functions v4 app that is not this repository's (fixtures/v4-app: an
// HTTP API, a Cosmos DB trigger with its lease container, a durable orchestration) adds the devhost tarball as a
// devDependency (with its sibling tarballs: they are not on the registry) and runs `npx cosmos-feed start`, as its
// README would say. No connection setting resolves, so the emulator starts embedded. Each function does its job,
// seen from outside over HTTP only; then Ctrl-C (SIGINT to the process group, as a terminal sends it) stops it cleanly.
import { afterAll, describe, expect, it } from "vitest";
import { settled, until } from "../../bench/lib/until.js";
import { type CliRun, killAll } from "../support/start-cli.js";
import { outside, runOutside } from "./support/outside.js";
import { DEVHOST_WORKER_LOAD_TIMEOUT_MS } from "./support/settings.js";

const READY = /Host lock lease acquired by instance ID '[0-9A-F]{32}'\./;
const runs: CliRun[] = [];
afterAll(() => killAll(runs));

describe("an existing v4 app on the devhost tarball", () => {
  it("`npx cosmos-feed start` serves HTTP, runs the Cosmos DB trigger and the orchestration; SIGINT stops it cleanly", async () => {
    const dir = outside().scenarios.devhostApp.dir;
    const run = runOutside("npx", ["cosmos-feed", "start", "--port", "0", "--emulator-port", "0"], dir, {
      DEVHOST_WORKER_LOAD_TIMEOUT_MS: String(DEVHOST_WORKER_LOAD_TIMEOUT_MS),
    });
    runs.push(run);
    const [, base] = await run.waitFor(/hello: \[GET\] (http:\/\/127\.0\.0\.1:\d+)\/api\/hello/);
    await run.waitFor(READY);
    // The installed, compiled CLI ran: never the TypeScript sources (the tarball has none).
    expect(run.output()).not.toMatch(/running from the TypeScript sources/);
    expect(run.output()).toMatch(/Cosmos DB emulator listening on https:\/\/127\.0\.0\.1:\d+\//);

    // HTTP
    const hello = await fetch(`${base}/api/hello?name=Ada`);
    expect(hello.status).toBe(200);
    expect(await hello.text()).toBe("Hello, Ada");

    // A write (through the app's output binding) triggers onOrder, whose effect is the audit entry.
    const created = await fetch(`${base}/api/orders`, {
      method: "POST",
      body: JSON.stringify({ id: "order-1", item: "lamp" }),
    });
    expect(created.status).toBe(201);
    const audit = await until("the trigger's audit entry for order-1", async () => {
      const res = await fetch(`${base}/api/audit/order-1`);
      return res.status === 200
        ? ((await res.json()) as { id: string; item: string; seenBy: string })
        : undefined;
    });
    expect(audit).toMatchObject({ id: "order-1", item: "lamp", seenBy: "onOrder" });

    // A durable orchestration started over HTTP runs its two activities and completes.
    const started = await fetch(`${base}/api/fulfil`, {
      method: "POST",
      body: JSON.stringify({ id: "order-1", item: "lamp" }),
    });
    expect(started.status).toBe(202);
    const { statusQueryGetUri } = (await started.json()) as { statusQueryGetUri: string };
    const status = await until("the orchestration's completion", async () => {
      const s = (await (await fetch(statusQueryGetUri)).json()) as { runtimeStatus: string; output: unknown };
      if (s.runtimeStatus === "Failed") throw new Error(`the orchestration failed: ${JSON.stringify(s)}`);
      return s.runtimeStatus === "Completed" ? s : undefined;
    });
    expect(status.output).toEqual(["reserved lamp", "shipped order-1"]);

    // Ctrl-C: the whole group (npx, its shell and the CLI) gets SIGINT. The CLI stops once, gracefully, and exits
    // 0; npx's shell, which got the SIGINT too, then ends itself with it and npx passes that on (as under
    // `npm start`: test/devhost/start-signals.test.ts), so npx ends by SIGINT or with the CLI's 0.
    run.signalGroup("SIGINT");
    const code = await settled("the dev host's exit after SIGINT", run.exited);
    const ended = code === null ? run.child.signalCode : code;
    expect([0, "SIGINT"], run.output()).toContain(ended);
    expect(run.output()).toMatch(
      /Received SIGINT; stopping\.[\s\S]*Host stopped\.[\s\S]*Stopped \(\d+ ms\)\./,
    );
    expect(run.output()).not.toMatch(/exiting at once|Unhandled/);
  });
});
