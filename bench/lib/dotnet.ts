import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/**
 * The .NET harness (interop/dotnet, built by `npm run interop:build`) as child processes: each prints one JSON
 * object per line on stdout (see interop/dotnet/Program.cs).
 */

export const HARNESS_DLL = fileURLToPath(
  new URL("../../interop/dotnet/bin/Release/net10.0/CosmosInterop.dll", import.meta.url),
);

/** How the harness reaches the emulator (interop/dotnet/Clients.cs ClientConfig). */
export interface DotnetClient {
  endpoint: string;
  key: string;
  /** "127.0.0.1:port": every connection goes there, whatever host the endpoint names. */
  connectTo?: string;
  /** How the emulator's certificate is judged (Clients.cs): "any" (default), "system" (the OS store), "file". */
  trust?: "any" | "system" | "file";
  /** With trust "file": the certificate trusted as the root. */
  caFile?: string;
}

export interface HarnessLine {
  ev: string;
  [k: string]: unknown;
}

function spawnHarness(command: string, config: object, env: NodeJS.ProcessEnv = {}): ChildProcess {
  if (!existsSync(HARNESS_DLL)) {
    throw new Error(`${HARNESS_DLL} is missing: run \`npm run interop:build\` (needs the .NET SDK) first.`);
  }
  return spawn("dotnet", [HARNESS_DLL, command, JSON.stringify(config)], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1", ...env },
  });
}

/** Runs a command to its end; resolves with its lines and exit code (stderr kept for failure messages). */
export async function runHarness(
  command: string,
  config: object,
  env?: NodeJS.ProcessEnv,
): Promise<{ lines: HarnessLine[]; code: number | null; stderr: string }> {
  const child = spawnHarness(command, config, env);
  child.stdin?.end();
  const lines: HarnessLine[] = [];
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const rl = createInterface({ input: child.stdout as NonNullable<ChildProcess["stdout"]> });
  rl.on("line", (l) => lines.push(parseLine(l)));
  const code = await new Promise<number | null>((resolve) => child.once("close", resolve));
  return { lines, code, stderr };
}

function parseLine(l: string): HarnessLine {
  try {
    return JSON.parse(l) as HarnessLine;
  } catch {
    return { ev: "text", text: l };
  }
}

/** interop/dotnet/ProcessorHost.cs ProcessorConfig (ms; 0 = the SDK's default). */
export interface DotnetProcessorConfig {
  database: string;
  monitored: string;
  leases: string;
  processorName: string;
  instanceName: string;
  mode?: "latest" | "allVersionsAndDeletes";
  startFromBeginning?: boolean;
  maxItems?: number;
  feedPollDelay?: number;
  leaseAcquireInterval?: number;
  leaseExpirationInterval?: number;
  leaseRenewInterval?: number;
  handlerDelayMs?: number;
  /** One `batch` line per handler call instead of a `doc` line per document. */
  reportBatches?: boolean;
}

/** One .NET Change Feed Processor host in its own process. */
export class DotnetProcessorHost {
  readonly lines: HarnessLine[] = [];
  readonly exited: Promise<number | null>;
  private readonly child: ChildProcess;
  private stderr = "";

  constructor(
    client: DotnetClient,
    readonly config: DotnetProcessorConfig,
  ) {
    this.child = spawnHarness("processor", { ...client, ...config });
    this.child.stderr?.on("data", (d: Buffer) => {
      this.stderr += d.toString();
    });
    createInterface({ input: this.child.stdout as NonNullable<ChildProcess["stdout"]> }).on("line", (l) =>
      this.lines.push({ ...parseLine(l), receivedAt: Date.now() }),
    );
    this.exited = new Promise((resolve) => this.child.once("close", resolve));
  }

  get name(): string {
    return this.config.instanceName;
  }

  /** Lines of one kind. */
  events(ev: string): HarnessLine[] {
    return this.lines.filter((l) => l.ev === ev);
  }

  /** What went wrong, for a failed wait: its fatal line, errors and stderr. */
  diagnostics(): string {
    const bad = this.lines.filter((l) => l.ev === "fatal" || l.ev === "error").slice(-5);
    return `${this.name}: ${JSON.stringify(bad)} ${this.stderr.slice(-2000)}`;
  }

  /** StopAsync (releases its leases); resolves when the process has exited. */
  async stop(): Promise<void> {
    this.child.stdin?.write("stop\n");
    await this.exited;
  }

  /** kill -9: a crash; its leases expire. */
  async kill(): Promise<void> {
    this.child.kill("SIGKILL");
    await this.exited;
  }
}
