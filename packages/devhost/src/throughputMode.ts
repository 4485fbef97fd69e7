import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SERVERLESS_RU_PER_PARTITION } from "@cosmos-feed/emulator";
import { DevHostError } from "./errors.js";

/**
 * The deployment's Cosmos DB throughput mode, which `cosmos-feed start` follows on its embedded emulator: the same
 * parameter azd passes to infra/bicep/main.bicep (`cosmosThroughputMode`, from main.parameters.json's
 * `${COSMOS_THROUGHPUT_MODE=serverless}`), so local throttling is the deployed account's, not another one's.
 */
export const THROUGHPUT_MODE = {
  /** The environment variable (and azd environment value) naming the mode. */
  setting: "COSMOS_THROUGHPUT_MODE",
  /** main.parameters.json's default. */
  default: "serverless",
  allowed: ["serverless", "manual", "autoscale"],
  /** The autoscale maximum (RU/s) of every container in autoscale mode, as main.parameters.json names it. */
  autoscaleMaxSetting: "COSMOS_AUTOSCALE_MAX_THROUGHPUT",
  autoscaleMaxDefault: 1000,
} as const;

export type ThroughputMode = (typeof THROUGHPUT_MODE.allowed)[number];

/** The mode `start` applies, and where it came from (for its one start-up line). */
export interface ThroughputChoice {
  mode: ThroughputMode;
  /** e.g. "the environment", ".azure/dev/.env", "the default". */
  from: string;
  /** Autoscale only: the maximum RU/s each container gets. */
  autoscaleMax: number;
}

/** An azd environment file (`KEY=value` or `KEY="value"` lines, `#` comments) as a map. */
function readDotEnv(file: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(file, "utf8").split(/\r?\n/)) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    const raw = m[2] ?? "";
    const quoted = /^(["'])(.*)\1$/.exec(raw);
    out.set(m[1] as string, quoted ? (quoted[2] ?? "") : raw);
  }
  return out;
}

/**
 * The azd environment's values: `.azure/<env>/.env` where `<env>` is AZURE_ENV_NAME, else `.azure/config.json`'s
 * `defaultEnvironment`; undefined when there is none (no azd environment in the folder).
 */
function azdEnvironment(
  appDir: string,
  env: NodeJS.ProcessEnv,
): { file: string; values: Map<string, string> } | undefined {
  let name = env.AZURE_ENV_NAME?.trim();
  if (!name) {
    const config = join(appDir, ".azure", "config.json");
    if (!existsSync(config)) return undefined;
    try {
      const parsed = JSON.parse(readFileSync(config, "utf8")) as { defaultEnvironment?: unknown };
      if (typeof parsed.defaultEnvironment === "string") name = parsed.defaultEnvironment.trim();
    } catch (e) {
      throw new DevHostError(`${config} is not valid JSON: ${(e as Error).message}`, {
        code: "InvalidOption",
      });
    }
  }
  if (!name) return undefined;
  const file = join(".azure", name, ".env");
  const path = join(appDir, file);
  return existsSync(path) ? { file, values: readDotEnv(path) } : undefined;
}

/**
 * Which throughput mode applies: COSMOS_THROUGHPUT_MODE from `env`, else from the azd environment file, else
 * serverless (the deployment's default). A value outside serverless/manual/autoscale is a DevHostError naming them.
 */
export function resolveThroughputMode(appDir: string, env: NodeJS.ProcessEnv): ThroughputChoice {
  const azd = azdEnvironment(appDir, env);
  const pick = (name: string): { value: string; from: string } | undefined => {
    const fromEnv = env[name]?.trim();
    if (fromEnv) return { value: fromEnv, from: `${name} in the environment` };
    const fromFile = azd?.values.get(name)?.trim();
    if (fromFile && azd) return { value: fromFile, from: `${name} in ${azd.file}` };
    return undefined;
  };
  const chosen = pick(THROUGHPUT_MODE.setting);
  const mode = chosen?.value ?? THROUGHPUT_MODE.default;
  if (!(THROUGHPUT_MODE.allowed as readonly string[]).includes(mode)) {
    throw new DevHostError(
      `${THROUGHPUT_MODE.setting} must be ${THROUGHPUT_MODE.allowed.map((m) => `'${m}'`).join(", ")} (default '${THROUGHPUT_MODE.default}'); got '${mode}' (${chosen?.from}).`,
      { code: "InvalidOption" },
    );
  }
  let autoscaleMax: number = THROUGHPUT_MODE.autoscaleMaxDefault;
  const max = mode === "autoscale" ? pick(THROUGHPUT_MODE.autoscaleMaxSetting) : undefined;
  if (max) {
    const n = /^\d+$/.test(max.value) ? Number(max.value) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < 1000 || n > 1_000_000 || n % 1000 !== 0) {
      throw new DevHostError(
        `${THROUGHPUT_MODE.autoscaleMaxSetting} must be RU/s from 1000 to 1000000 in steps of 1000 (default ${THROUGHPUT_MODE.autoscaleMaxDefault}); got '${max.value}' (${max.from}).`,
        { code: "InvalidOption" },
      );
    }
    autoscaleMax = n;
  }
  return {
    mode: mode as ThroughputMode,
    from:
      chosen?.from ??
      `the default: no ${THROUGHPUT_MODE.setting} in the environment${azd ? ` or ${azd.file}` : " and no azd environment"}`,
    autoscaleMax,
  };
}

/** The start-up line: which limits the embedded emulator enforces, and why. */
export function describeThroughputMode(choice: ThroughputChoice): string {
  const what =
    choice.mode === "serverless"
      ? `serverless (containers without throughput, up to ${SERVERLESS_RU_PER_PARTITION.toLocaleString("en-US")} RU/s per physical partition each)`
      : choice.mode === "manual"
        ? "manual (each container its containers.json RU/s, enforced with 429s)"
        : `autoscale (each container up to ${choice.autoscaleMax} RU/s, enforced at that maximum)`;
  return `Cosmos DB throughput mode: ${what}; from ${choice.from}.`;
}
