import { DevHostError } from "../errors.js";

/**
 * The app setting the Node worker documents for node's own arguments (e.g. `--inspect=9229`, what the Azure
 * Functions VS Code extension sets for its "Attach to Node Functions"). The host reads it as configuration
 * `languageWorkers:node:arguments`: from the environment, where `__` stands for `:` and names are case-insensitive,
 * so local.settings.json `Values` (copied into the environment unless it has the name) work too.
 */
export const NODE_ARGUMENTS_SETTING = "languageWorkers__node__arguments";

const SETTING_NAME = /^languageWorkers(?:__|:)node(?:__|:)arguments$/i;

/** Node's default inspector address (`--inspect` without a value). */
export const DEFAULT_INSPECTOR = { host: "127.0.0.1", port: 9229 } as const;

export interface InspectorAddress {
  host: string;
  /** 0: node picks a free port at each start. */
  port: number;
}

/** What the worker process is started with: `node <args> entry.mjs`, as the host puts them before the worker's file. */
export interface WorkerNodeArguments {
  args: string[];
  /** Where they came from, for the log (the setting's name as found, or `--inspect`). */
  source: string;
  /** Where the worker's debugger listens, when the arguments open one. */
  inspector?: InspectorAddress;
}

/**
 * `[host:]port` as node reads the value of `--inspect=` (its `ParseHostPort`): digits are a port, `host:port` or
 * `[ipv6]:port` both, anything else a host on the default port. Undefined when a port is not 0–65535.
 */
export function parseHostPort(value: string): InspectorAddress | undefined {
  const port = (raw: string) => {
    const n = Number(raw);
    return Number.isInteger(n) && n <= 65535 ? n : undefined;
  };
  if (/^\d+$/.test(value)) {
    const p = port(value);
    return p === undefined ? undefined : { host: DEFAULT_INSPECTOR.host, port: p };
  }
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(value) ?? /^([^:[\]]+):(\d+)$/.exec(value);
  if (m) {
    const p = port(m[2]);
    return p === undefined ? undefined : { host: m[1], port: p };
  }
  return value === "" ? undefined : { host: value.replace(/^\[(.*)\]$/, "$1"), port: DEFAULT_INSPECTOR.port };
}

/** Node's flags that open the inspector, or only set where it would listen (`--inspect-port`, `--debug-port`). */
const INSPECT_FLAG = /^--(inspect|inspect-brk|inspect-wait|inspect-port|debug-port)(?:=(.*))?$/;

/**
 * Where node's arguments put the inspector: the last address any of its flags names (node's rule), on when one of
 * `--inspect`, `--inspect-brk`, `--inspect-wait` is there.
 */
export function inspectorOf(args: readonly string[]): InspectorAddress | undefined {
  let on = false;
  let address: InspectorAddress = { ...DEFAULT_INSPECTOR };
  for (const arg of args) {
    const m = INSPECT_FLAG.exec(arg);
    if (!m) continue;
    if (!/port$/.test(m[1])) on = true;
    if (m[2] !== undefined) address = parseHostPort(m[2]) ?? address;
  }
  return on ? address : undefined;
}

/**
 * The value of `cosmos-feed start --inspect[=[host:]port]`: true for the bare flag, else a port or `host:port`, as
 * node documents the flag. Anything else (commander hands over the next word: `start --inspect .`) is a clear error.
 */
export function parseInspectFlag(value: string | true): string | true {
  if (value === true || (/^(?:.+:)?\d+$/.test(value) && parseHostPort(value))) return value;
  throw new DevHostError(
    `--inspect takes [host:]port (e.g. --inspect=9229), not '${value}'. Give the app folder before the flag: cosmos-feed start . --inspect`,
    { code: "InvalidOption" },
  );
}

/**
 * The worker's node arguments: the setting split on whitespace with `%NAME%` expanded from the worker's environment
 * (unset names removed), as the host does (RpcWorkerConfigFactory, DefaultWorkerProcessFactory). `inspect`
 * (`cosmos-feed start --inspect`) replaces the setting's inspector flags, so there is one port.
 */
export function workerNodeArguments(
  env: NodeJS.ProcessEnv,
  inspect?: string | true,
): WorkerNodeArguments | undefined {
  const name = Object.keys(env).find((k) => SETTING_NAME.test(k) && env[k]?.trim());
  const fromSetting = name
    ? (env[name] as string)
        .split(/\s+/)
        .map((a) => a.replace(/%([^%\s]+)%/g, (_, n: string) => env[n] ?? ""))
        .filter((a) => a !== "")
    : [];
  if (inspect === undefined) {
    if (!name || fromSetting.length === 0) return undefined;
    return { args: fromSetting, source: name, inspector: inspectorOf(fromSetting) };
  }
  const args = [
    ...fromSetting.filter((a) => !INSPECT_FLAG.test(a)),
    inspect === true ? "--inspect" : `--inspect=${inspect}`,
  ];
  return { args, source: name ? `--inspect, with ${name}` : "--inspect", inspector: inspectorOf(args) };
}

/** `host:port` for the log, `[ipv6]:port` for an IPv6 host. */
export function formatAddress(a: InspectorAddress): string {
  return `${a.host.includes(":") ? `[${a.host}]` : a.host}:${a.port}`;
}
