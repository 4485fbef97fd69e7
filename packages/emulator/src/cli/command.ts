import { resolve } from "node:path";
import { Command, InvalidArgumentError } from "commander";
import { ALLOWED_HOSTS_ENV } from "../hostGuard.js";
import { type DataFolderLock, lockDataFolder } from "../lifecycle/dataFolderLock.js";
import { CLI_TIMING } from "../lifecycle/settings.js";
import { onStopSignals } from "../lifecycle/signals.js";
import { EmulatorStartError, type RunningEmulator, startEmulator } from "../server.js";
import { standaloneCertificate } from "./certificate.js";

/** The port the emulator listens on when `--port` is not given: the Cosmos DB emulator's own. */
export const DEFAULT_PORT = 8081;

/** How {@link emulatorCommand} names itself. */
export interface EmulatorCommandOptions {
  /** The command's name in its usage line: `cosmos-emulator`, or `emulator` as a subcommand of `cosmos-feed`. */
  name: string;
  /**
   * What its one-line messages start with and what the data folder's lock names as its holder, e.g.
   * `cosmos-emulator` or `cosmos-feed emulator`.
   */
  label: string;
  /** The `--help` description (default: "Run the embedded Cosmos DB (NoSQL) emulator in the foreground"). */
  description?: string;
}

function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}.`);
    }
    return n;
  };
}

function tlsAuto(raw: string): "auto" {
  if (raw === "auto") return raw;
  throw new InvalidArgumentError("'auto' (or give --tls-cert and --tls-key).");
}

function durability(raw: string): "normal" | "full" {
  if (raw !== "normal" && raw !== "full")
    throw new InvalidArgumentError("--durability is 'normal' or 'full'.");
  return raw;
}

function accountKey(raw: string): string {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || Buffer.from(raw, "base64").length < 16) {
    throw new InvalidArgumentError("--key must be a base64 string of at least 16 bytes.");
  }
  return raw;
}

/** The parsed options of the emulator command (commander's camel-cased names). */
interface EmulatorCliOptions {
  port: number;
  host: string;
  dataDir?: string;
  durability: "normal" | "full";
  key?: string;
  ranges?: number;
  throttle: boolean;
  serverless?: boolean;
  tlsCert?: string;
  tlsKey?: string;
  tls?: "auto";
  allowedHosts?: string;
  log?: boolean;
}

/**
 * The emulator's command line as a commander `Command`: its flags (`--port` default 8081, `--host`, `--data-dir`,
 * `--durability`, `--key`, `--ranges`, `--no-throttle`, `--serverless`, `--tls-cert`/`--tls-key`, `--tls auto`, `--allowed-hosts`,
 * `--log`) and the action that starts the emulator in the foreground, locks its data folder, prints the endpoint and
 * connection string, and stops it on SIGINT/SIGTERM (exit 0; a later, separate signal exits at once with 130).
 * Bad flags and a failed start are one line on stderr and exit 1. The `cosmos-emulator` bin runs it as the program;
 * the dev host adds it to `cosmos-feed` as its `emulator` subcommand.
 */
export function emulatorCommand(options: EmulatorCommandOptions): Command {
  const { label } = options;
  const command = new Command(options.name)
    .description(options.description ?? "Run the embedded Cosmos DB (NoSQL) emulator in the foreground")
    .option("-p, --port <port>", "TCP port", integer("--port", 0, 65535), DEFAULT_PORT)
    .option("--host <host>", "interface to bind", "127.0.0.1")
    .option("--data-dir <dir>", "persist to SQLite in this directory (default: in memory)")
    .option(
      "--durability <mode>",
      "with --data-dir: 'normal' survives process crashes, 'full' adds an fsync per commit (power loss)",
      durability,
      "normal",
    )
    .option(
      "--key <base64>",
      "account key clients sign with (default: the well-known emulator key)",
      accountKey,
    )
    .option("--ranges <n>", "physical partition key ranges per new container", integer("--ranges", 1, 64))
    .option("--no-throttle", "do not answer 429 when provisioned throughput is exceeded")
    .option(
      "--serverless",
      "a serverless account: no offers (throughput on create and the offers API are refused as the service does), 5,000 RU/s per physical partition",
    )
    .option("--tls-cert <file>", "serve HTTPS with this PEM certificate (needs --tls-key)")
    .option("--tls-key <file>", "PEM private key for --tls-cert")
    .option(
      "--tls <mode>",
      "'auto': HTTPS (and HTTP on the same port) with a certificate made once into <data-dir>/tls (in memory: a folder of yours under the system's temp folder)",
      tlsAuto,
    )
    .option(
      "--allowed-hosts <names>",
      `host names answered besides localhost, *.localhost, 127.0.0.1, [::1] and the bound address: comma-separated, '*.domain' for a domain, '*' for any (default: $${ALLOWED_HOSTS_ENV})`,
    )
    .option("--log", "log every request to stderr");
  command.action(async (opts: EmulatorCliOptions) => {
    if (Boolean(opts.tlsCert) !== Boolean(opts.tlsKey)) {
      command.error("--tls-cert and --tls-key go together.");
    }
    if (opts.tls && opts.tlsCert)
      command.error("--tls auto makes a certificate: leave out --tls-cert/--tls-key.");
    await runEmulator(opts, label);
  });
  return command;
}

/** Starts the emulator for the parsed options and keeps it running until a stop signal. */
async function runEmulator(opts: EmulatorCliOptions, label: string): Promise<void> {
  let emu: RunningEmulator;
  try {
    const made = opts.tls ? standaloneCertificate(opts.dataDir, opts.host) : undefined;
    emu = await startEmulator({
      port: opts.port,
      host: opts.host,
      dataDir: opts.dataDir,
      durability: opts.durability,
      key: opts.key,
      rangesPerContainer: opts.ranges,
      enforceThroughput: opts.throttle,
      capacityMode: opts.serverless ? "serverless" : "provisioned",
      tls: made
        ? { certFile: made.certFile, keyFile: made.keyFile, http: true }
        : opts.tlsCert && opts.tlsKey
          ? { certFile: opts.tlsCert, keyFile: opts.tlsKey }
          : undefined,
      allowedHosts: opts.allowedHosts ?? process.env[ALLOWED_HOSTS_ENV],
      log: opts.log,
    });
  } catch (e) {
    // One line that says what to change, not a stack trace.
    const reason =
      e instanceof EmulatorStartError
        ? e.message
        : `Cannot start the emulator: ${(e as Error).message ?? String(e)}`;
    console.error(`${label}: ${reason}`);
    process.exit(1);
  }
  // One process per data folder (a `cosmos-feed start` on it runs an emulator too).
  let lock: DataFolderLock | undefined;
  if (opts.dataDir) {
    try {
      lock = await lockDataFolder(resolve(opts.dataDir), {
        holder: label,
        log: (line) => console.log(line),
      });
    } catch (e) {
      await emu.close();
      console.error(`${label}: ${(e as Error).message}`);
      process.exit(1);
    }
    process.on("exit", () => lock?.release());
  }
  console.log(
    `Cosmos DB emulator listening on ${emu.endpoint}${opts.dataDir ? ` (data in ${opts.dataDir})` : " (in memory)"}`,
  );
  console.log(`Connection string: ${emu.connectionString}`);
  if (emu.tls) {
    const file = emu.tls.certFile;
    console.log(
      `HTTPS with the certificate ${file}${emu.tls.http ? " (http:// answered on the same port too)" : ""}: trust it with NODE_EXTRA_CA_CERTS=${file} (Node.js), SSL_CERT_FILE=${file} (.NET on Linux), keytool -importcert -alias cosmos-feed-emulator -file ${file} (Java); docs/emulator.md#https`,
    );
  }
  console.log(`  new CosmosClient({ endpoint: "${emu.endpoint}", key: "<the key above>" })`);
  // One Ctrl-C (a burst of signals: the terminal's and npm's) stops; a later, separate signal exits at once.
  onStopSignals({
    burstMs: CLI_TIMING.signalBurstMs,
    stop: (signal) => {
      console.log(`Received ${signal}; stopping the emulator.`);
      void emu.close().then(() => process.exit(0));
    },
    force: () => process.exit(130),
  });
}
