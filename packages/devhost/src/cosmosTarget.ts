import { connect } from "node:net";
import { cosmosBindingKind } from "./cosmos/appBindings.js";
import { cosmosConnectionSettings } from "./cosmos/optionNames.js";
import { cosmosExtensionMajor } from "./extensionBundle.js";
import type { LoadedApp } from "./loader.js";

/** Where the app's Cosmos DB connections point: the embedded emulator, a given account, or the app's settings. */
export type CosmosTarget =
  | { kind: "emulator" }
  | { kind: "connectionString"; value: string }
  | { kind: "auto" };

const CONNECTION_STRING = /(^|;)\s*AccountEndpoint\s*=/i;

/** Setting names that hold a Cosmos DB connection in local.settings.json / the environment (string or identity). */
export function cosmosSettingNames(settings: Record<string, string>, env: NodeJS.ProcessEnv): string[] {
  const names = new Set<string>();
  for (const source of [settings, env]) {
    for (const [name, value] of Object.entries(source)) {
      if (typeof value === "string" && CONNECTION_STRING.test(value)) names.add(name);
      const identity = /^(.+)__accountEndpoint$/i.exec(name);
      if (identity && source === settings) names.add(identity[1]);
    }
  }
  return [...names];
}

/**
 * The connection setting names of the app's Cosmos DB triggers and bindings (`connection` / `leaseConnection`, or
 * extension 3.x's `connectionStringSetting` / `leaseConnectionStringSetting` and its default setting, as the app's
 * extension bundle reads them).
 */
export function bindingConnectionNames(app: LoadedApp): string[] {
  const major = cosmosExtensionMajor(app.config.extensionBundle);
  const names = new Set<string>();
  for (const fn of app.functions) {
    for (const binding of Object.values(fn.bindings)) {
      const kind = cosmosBindingKind(binding);
      if (!kind) continue;
      for (const name of cosmosConnectionSettings(kind, binding, major)) names.add(name);
    }
  }
  return [...names];
}

/** True when a connection setting resolves as the extension reads it: a value, or `<name>__accountEndpoint`. */
export function connectionResolves(name: string, env: NodeJS.ProcessEnv): boolean {
  return Boolean(env[name] || env[`${name}__accountEndpoint`]);
}

/** Points each named setting at `connectionString` (the value wins over `<name>__accountEndpoint`). */
export function pointConnections(
  names: string[],
  connectionString: string,
  env: NodeJS.ProcessEnv,
): string[] {
  const changed: string[] = [];
  for (const name of names) {
    if (env[name] === connectionString) continue;
    env[name] = connectionString;
    changed.push(name);
  }
  return changed;
}

/**
 * The port of a connection string that names a local Cosmos DB emulator (a loopback endpoint signed with the
 * well-known emulator key, as local.settings.json samples carry), else undefined.
 */
export function localEmulatorPort(value: string | undefined, wellKnownKey: string): number | undefined {
  if (!value) return undefined;
  const endpoint = /(?:^|;)\s*AccountEndpoint\s*=\s*([^;]+)/i.exec(value)?.[1];
  const key = /(?:^|;)\s*AccountKey\s*=\s*([^;]+)/i.exec(value)?.[1];
  if (!endpoint || key?.trim() !== wellKnownKey) return undefined;
  try {
    const url = new URL(endpoint.trim());
    if (!["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)) return undefined;
    return Number(url.port || (url.protocol === "https:" ? 443 : 80));
  } catch {
    return undefined;
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port (a short probe). */
export function portAnswers(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
