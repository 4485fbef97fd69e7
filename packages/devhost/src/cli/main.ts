#!/usr/bin/env node
import { readFileSync } from "node:fs";
import { ChangeFeedDefaults } from "@cosmos-feed/changefeed";
import { WELL_KNOWN_EMULATOR_KEY } from "@cosmos-feed/emulator";
import { emulatorCommand } from "@cosmos-feed/emulator/cli";
import { Command, InvalidArgumentError } from "commander";
import { readLeases } from "../leaseReport.js";
import { DEFAULT_EMULATOR_PORT } from "../startCommand.js";
import { MeasureDefaults } from "../tuning/defaults.js";
import { CliInputError, clientFor, formatLeases } from "./leases.js";
import { runStart } from "./start.js";
import { formatThroughput, throughput } from "./throughput.js";
import { runTune, type TuneCommandOptions } from "./tune-command.js";

/** A default interval (ms) as the duration the tune options take, e.g. `17s`. */
const seconds = (ms: number): string => `${ms / 1000}s`;

function integer(name: string, min: number, max: number) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}.`);
    }
    return n;
  };
}

function emulatorTlsMode(raw: string): "auto" | "off" {
  if (raw === "auto" || raw === "off") return raw;
  throw new InvalidArgumentError("'auto' (HTTPS, and HTTP on the same port) or 'off' (HTTP only).");
}

// src/cli/main.ts (tsx) or dist/cli/main.js (compiled): the devhost package's package.json is two up.
const packageJsonUrl = new URL("../../package.json", import.meta.url);
const packageJson = JSON.parse(readFileSync(packageJsonUrl, "utf8")) as { version: string };

const program = new Command("cosmos-feed")
  .description("cosmos-feed-app tools")
  .version(packageJson.version, "-V, --version", "print the version");

// `cosmos-feed emulator`: the emulator package's own command line (`cosmos-emulator`), as a subcommand.
program.addCommand(emulatorCommand({ name: "emulator", label: "cosmos-feed emulator" }));

program
  .command("start")
  .description("Run an Azure Functions v4 app folder locally: HTTP triggers, Cosmos DB triggers and bindings")
  .argument("[appDir]", "the app folder (package.json, host.json, local.settings.json)", ".")
  .option(
    "-p, --port <port>",
    "HTTP port (default: local.settings.json Host.LocalHttpPort, else 7071)",
    integer("--port", 0, 65535),
  )
  .option(
    "--cosmos <target>",
    "'emulator' or a Cosmos DB connection string (default: the app's settings; the emulator when none resolves)",
  )
  .option(
    "--emulator-port <port>",
    "port of the embedded emulator",
    integer("--emulator-port", 0, 65535),
    DEFAULT_EMULATOR_PORT,
  )
  .option(
    "--emulator-tls <mode>",
    "the embedded emulator: 'auto' serves HTTPS with a certificate made once into <data-dir>/tls (and HTTP on the same port), 'off' HTTP only",
    emulatorTlsMode,
    "auto",
  )
  .option(
    "--emulator-tls-cert <file>",
    "serve the emulator's HTTPS with this PEM certificate (needs --emulator-tls-key)",
  )
  .option("--emulator-tls-key <file>", "PEM private key for --emulator-tls-cert")
  .option(
    "--data-dir <dir>",
    "data folder: emulator data and timer statuses, one dev host at a time (default: <appDir>/.data/cosmos-emulator)",
  )
  .option(
    "--containers <file>",
    "container definitions for containers created on the emulator (default: <appDir>/src/shared/containers.json)",
  )
  .option(
    "--cors <origins>",
    "comma-separated CORS origins, '*' for any (default: local.settings.json Host.CORS; none = no CORS headers)",
  )
  .option(
    "--cors-credentials",
    "allow credentials in CORS (default: local.settings.json Host.CORSCredentials)",
  )
  .option(
    "--allowed-hosts <names>",
    "host names the HTTP server answers besides localhost, *.localhost, 127.0.0.1 and [::1]: comma-separated, '*.domain' for a domain, '*' for any (default: local.settings.json Host.AllowedHosts)",
  )
  .option(
    "--no-build",
    "do not run `npm run build` (when main matches no file, or the sources are newer than the build)",
  )
  .option("--watch", "rebuild and restart the app when a source file changes")
  .option(
    "--inspect [[host:]port]",
    "node's debugger in the worker process, where the app runs (default 127.0.0.1:9229), on the same port after every worker restart; as languageWorkers__node__arguments=--inspect=<port>",
  )
  .action(async (appDir: string, opts) => {
    if (Boolean(opts.emulatorTlsCert) !== Boolean(opts.emulatorTlsKey)) {
      program.error("--emulator-tls-cert and --emulator-tls-key go together.");
    }
    if (opts.emulatorTlsCert && opts.emulatorTls === "off") {
      program.error("--emulator-tls off serves HTTP only: leave out --emulator-tls-cert/--emulator-tls-key.");
    }
    await runStart({
      appDir,
      port: opts.port,
      cosmos: opts.cosmos,
      emulatorPort: opts.emulatorPort,
      emulatorTls: opts.emulatorTlsCert
        ? { certFile: opts.emulatorTlsCert, keyFile: opts.emulatorTlsKey }
        : opts.emulatorTls,
      dataDir: opts.dataDir,
      containers: opts.containers,
      cors: opts.cors,
      corsCredentials: opts.corsCredentials,
      allowedHosts: opts.allowedHosts,
      build: opts.build,
      watch: opts.watch === true,
      inspect: opts.inspect,
    });
  });

program
  .command("leases")
  .description("List the leases of a lease container: owner, continuation, last write, lag, expired")
  .option(
    "--connection <value>",
    "connection string, or account endpoint (DefaultAzureCredential); default: $COSMOS_CONNECTION, else the local emulator",
  )
  .requiredOption(
    "--database <name>",
    "database of the monitored container (and of the leases, unless --lease-database)",
  )
  .option("--lease-container <name>", "lease container", "leases")
  .option("--lease-database <name>", "database of the lease container (default: --database)")
  .option("--container <name>", "the monitored container: lag is estimated only with it")
  .option(
    "--prefix <prefix>",
    "only leases whose prefix starts with this (the trigger's leaseContainerPrefix)",
  )
  .option(
    "--expiration <ms>",
    "lease expiration interval: an owned lease not written for longer is expired",
    integer("--expiration", 1, 86_400_000),
    60_000,
  )
  .option("--json", "print JSON")
  .action(async (opts) => {
    const connection =
      opts.connection ??
      process.env.COSMOS_CONNECTION ??
      `AccountEndpoint=http://127.0.0.1:${DEFAULT_EMULATOR_PORT}/;AccountKey=${WELL_KNOWN_EMULATOR_KEY};`;
    try {
      const client = clientFor(connection);
      const report = await readLeases(client, {
        connection,
        database: opts.database,
        leaseContainer: opts.leaseContainer,
        leaseDatabase: opts.leaseDatabase,
        container: opts.container,
        prefix: opts.prefix,
        expirationMs: opts.expiration,
      });
      console.log(opts.json ? JSON.stringify(report, null, 2) : formatLeases(report));
      client.dispose();
    } catch (e) {
      const err = e as { code?: number | string; message?: string };
      const reason =
        e instanceof CliInputError
          ? e.message
          : err.code === 404
            ? `the database or lease container does not exist (${err.message?.split("\n")[0] ?? ""})`
            : err.code === "ECONNREFUSED"
              ? "cannot reach Cosmos DB at that endpoint (is the emulator running? `npm run emulator`)"
              : (err.message ?? String(e)).split("\n")[0];
      console.error(`cosmos-feed leases: ${reason}`);
      process.exit(1);
    }
  });

program
  .command("tune")
  .description(
    "Lease and poll cost (requests, RU) and failover bounds for given intervals: this processor and .NET",
  )
  .option("--hosts <n>", "hosts running the trigger", integer("--hosts", 1, 10_000), 1)
  .option(
    "--leases <n>",
    "leases (physical partitions of the monitored container)",
    integer("--leases", 1, 100_000),
    1,
  )
  .option("--writes <n>", "changes per second to the monitored container", (v) => Number(v), 0)
  .option(
    "--renew <duration>",
    "leaseRenewInterval (e.g. 17s)",
    seconds(ChangeFeedDefaults.leaseRenewInterval),
  )
  .option("--acquire <duration>", "leaseAcquireInterval", seconds(ChangeFeedDefaults.leaseAcquireInterval))
  .option(
    "--expiration <duration>",
    "leaseExpirationInterval",
    seconds(ChangeFeedDefaults.leaseExpirationInterval),
  )
  .option("--poll <duration>", "feedPollDelay", seconds(ChangeFeedDefaults.feedPollDelay))
  .option("--sweep <spec>", "e.g. leaseExpirationInterval=10s..120s[:steps]: RU/s against failover time")
  .option("--svg <file>", "with --sweep: where the chart goes", "tune-sweep.svg")
  .option("--png <file>", "with --sweep: the chart as PNG too (default: the SVG's name with .png)")
  .option("--no-png", "with --sweep: write the SVG only")
  .option("--json", "print JSON")
  .option(
    "--watch <duration>",
    `leaseWatchInterval of this processor, 0 = off (default ${seconds(ChangeFeedDefaults.leaseWatchInterval)})`,
  )
  .option(
    "--checkpoint-delay <duration>",
    `maxCheckpointDelay of this processor (default ${seconds(ChangeFeedDefaults.maxCheckpointDelay)})`,
  )
  .option(
    "--measure",
    "run the scenario on the embedded emulator with real processors and a writer; model vs measured per row",
  )
  .option("--scale <n>", `with --measure: every interval ÷ this (default ${MeasureDefaults.scale})`)
  .option(
    "--window <duration>",
    `with --measure: wall-clock window (default ${MeasureDefaults.windowMs / 1000}s)`,
  )
  .action((opts: TuneCommandOptions, cmd: Command) =>
    runTune(opts, (name) => cmd.getOptionValueSource(name) === "cli"),
  );

program
  .command("throughput")
  .description(
    "Read or change a container's (or database's) throughput; with --hosts/--leases, what a lease container needs",
  )
  .option(
    "--connection <value>",
    "connection string or account endpoint (default: $COSMOS_CONNECTION, else the local emulator)",
  )
  .requiredOption("--database <name>", "database")
  .option("--container <name>", "container (default: the database's shared throughput)")
  .option("--set <RU/s>", "set manual throughput", integer("--set", 400, 1_000_000))
  .option("--autoscale <RU/s>", "set the autoscale maximum", integer("--autoscale", 1000, 1_000_000))
  .option("--hosts <n>", "for the recommendation: hosts of the trigger", integer("--hosts", 1, 10_000))
  .option("--leases <n>", "for the recommendation: leases", integer("--leases", 1, 100_000))
  .option("--json", "print JSON")
  .action(async (opts) => {
    const connection =
      opts.connection ??
      process.env.COSMOS_CONNECTION ??
      `AccountEndpoint=http://127.0.0.1:${DEFAULT_EMULATOR_PORT}/;AccountKey=${WELL_KNOWN_EMULATOR_KEY};`;
    try {
      if (opts.set !== undefined && opts.autoscale !== undefined)
        throw new CliInputError("--set or --autoscale, not both.");
      const client = clientFor(connection);
      const model =
        opts.hosts !== undefined || opts.leases !== undefined
          ? {
              hosts: opts.hosts ?? 1,
              leases: opts.leases ?? 1,
              writesPerSecond: 0,
              leaseRenewIntervalMs: 17_000,
              leaseAcquireIntervalMs: 13_000,
              leaseExpirationIntervalMs: 60_000,
              feedPollDelayMs: 5_000,
            }
          : undefined;
      const report = await throughput(client, {
        database: opts.database,
        container: opts.container,
        set: opts.set,
        autoscale: opts.autoscale,
        model,
      });
      console.log(opts.json ? JSON.stringify(report, null, 2) : formatThroughput(report));
      client.dispose();
    } catch (e) {
      const err = e as { code?: number | string; message?: string };
      const reason =
        e instanceof CliInputError
          ? e.message
          : err.code === 404
            ? "the database or container does not exist"
            : err.code === 400
              ? `refused by the service: ${(err.message ?? "").split("\n")[0]}`
              : (err.message ?? String(e)).split("\n")[0];
      console.error(`cosmos-feed throughput: ${reason}`);
      process.exit(1);
    }
  });

await program.parseAsync();
