import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { WAIT_MS } from "./until.js";

/** The repository root (the app: functions/, src/, package.json, host.json). */
export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

/**
 * Builds the app as `npm run build` does (tsconfig.build.json) into `<appDir>/dist` of a temp app folder, next to
 * copies of package.json (its `main` is dist/functions/*.js) and host.json, and a link to the repo's node_modules.
 * So the child runs the compiled app exactly as deployed, while the repo's dist/ and .data/ (the timer's schedule
 * statuses go under <appDir>/.data) are never touched. tsc takes ~5 s here.
 */
export async function buildAppFolder(appDir: string): Promise<void> {
  mkdirSync(appDir, { recursive: true });
  const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
  try {
    await promisify(execFile)(
      process.execPath,
      [tsc, "-p", join(repoRoot, "tsconfig.build.json"), "--outDir", join(appDir, "dist")],
      { cwd: repoRoot },
    );
  } catch (e) {
    const out = e as { stdout?: string; stderr?: string; message: string };
    throw new Error(`The app does not build: ${out.stdout ?? ""}${out.stderr ?? ""}${out.message}`);
  }
  copyFileSync(join(repoRoot, "package.json"), join(appDir, "package.json"));
  copyFileSync(join(repoRoot, "host.json"), join(appDir, "host.json"));
  symlinkSync(join(repoRoot, "node_modules"), join(appDir, "node_modules"), "dir");
}

/**
 * The app settings the e2e tests run the dev host with: feed poll 100 ms (the summaries' too, and their recount window), lease renew/acquire 1 s, expiry 5 s (the
 * settings' minimum), lock TTL 3 s (the minimum), request bodies ≤ 1024 bytes, short retry and durable intervals;
 * containers made by the app on first use (COSMOS_ENSURE_CONTAINERS), as a user of a separate emulator does.
 */
export const FAST_APP_SETTINGS: Readonly<Record<string, string>> = {
  COSMOS_ENSURE_CONTAINERS: "true",
  FEED_POLL_DELAY_MS: "100",
  SUMMARY_POLL_DELAY_MS: "100",
  SUMMARY_RECOUNT_WINDOW_MS: "100",
  LEASE_ACQUIRE_INTERVAL_MS: "1000",
  LEASE_RENEW_INTERVAL_MS: "1000",
  LEASE_EXPIRATION_INTERVAL_MS: "5000",
  LOCK_TTL_SECONDS: "3",
  MAX_REQUEST_BODY_BYTES: "1024",
  TRIGGER_RETRY_MIN_INTERVAL_MS: "100",
  TRIGGER_RETRY_MAX_INTERVAL_MS: "1000",
  ACTIVITY_FIRST_RETRY_INTERVAL_MS: "100",
  DURABLE_FEED_POLL_DELAY_MS: "100",
  DURABLE_LEASE_ACQUIRE_INTERVAL_MS: "500",
  DURABLE_LEASE_RENEW_INTERVAL_MS: "500",
  DURABLE_LEASE_EXPIRATION_INTERVAL_MS: "3000",
  DURABLE_TIMER_SCAN_INTERVAL_MS: "500",
};

export interface AppChild {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  /** Everything the child printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | string | null>;
}

/**
 * `node packages/devhost/bin/cosmos-feed.js start <appDir> --port 0 --no-build [--cosmos <connection string>] [args]` with `env` added to
 * this process's environment; resolves once the host printed "Host started" (HTTP listens, triggers started or
 * retrying). Every child is pushed to `children` so afterAll can kill it.
 */
export async function startAppChild(options: {
  appDir: string;
  /** The account; undefined: the dev host's embedded emulator (`args` then say its port, TLS and data folder). */
  connectionString: string | undefined;
  args?: readonly string[];
  env: Readonly<Record<string, string>>;
  children: ChildProcess[];
  startTimeoutMs?: number;
}): Promise<AppChild> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, "packages", "devhost", "bin", "cosmos-feed.js"),
      "start",
      options.appDir,
      "--port",
      "0",
      "--no-build",
      ...(options.connectionString === undefined ? [] : ["--cosmos", options.connectionString]),
      ...(options.args ?? []),
    ],
    { cwd: options.appDir, env: { ...process.env, ...options.env }, stdio: ["ignore", "pipe", "pipe"] },
  );
  options.children.push(child);
  let text = "";
  child.stdout?.on("data", (d: Buffer) => {
    text += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    text += d.toString();
  });
  const exited = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  const deadline = Date.now() + (options.startTimeoutMs ?? WAIT_MS);
  for (;;) {
    if (text.includes("Host started")) break;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(
        `The dev host exited (${child.exitCode ?? child.signalCode}) before starting:\n${text}`,
      );
    }
    if (Date.now() > deadline) throw new Error(`The dev host did not start in time:\n${text}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  // The function list's HTTP lines: `\tname: [GET,POST] http://127.0.0.1:<port>/<prefix>/<route>`.
  const port = /\] http:\/\/127\.0\.0\.1:(\d+)\//.exec(text)?.[1];
  if (!port) throw new Error(`No HTTP address in the dev host's output:\n${text}`);
  return { child, baseUrl: `http://127.0.0.1:${port}`, output: () => text, exited };
}
