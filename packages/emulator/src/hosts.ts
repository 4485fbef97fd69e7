import { CosmosFeedError } from "@cosmos-feed/core/errors";

/** An allow-list entry is not a host name (code "InvalidOption"): the dev host and the emulator print its message. */
export class AllowedHostsError extends CosmosFeedError {}

/**
 * The DNS-rebinding guard: the host names the dev host (and the emulator, hostGuard.ts) answers. A web page cannot choose the Host header its browser
 * sends — it is the page's own host name, even after the attacker's DNS points that name at 127.0.0.1 — so answering
 * only loopback names (and names the user lists) keeps pages on other sites from reading or driving the dev host.
 * Loopback: `localhost`, `*.localhost` (RFC 6761 keeps them on the machine), 127.0.0.0/8 and `[::1]`, any port.
 */
export interface HostAllowList {
  /** `*` was listed: every Host is answered (the guard is off). */
  any: boolean;
  /** Normalized host names (lower case, IPv6 in brackets, no trailing dot). */
  names: Set<string>;
  /** From `*.example.com` entries: ".example.com" (the name itself and any below it). */
  suffixes: string[];
  /** For messages: the entries as the user gave them, and the bind name when it was added. */
  listed: string[];
}

/** What the Host header may look like: a name or IPv4, or a bracketed IPv6, then an optional port. */
const HOST_HEADER = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::\d{1,5})?$/;

/**
 * The host name of a Host header (or of an allow-list entry) as the WHATWG URL parser normalizes it: lower case,
 * IPv4 in dotted decimal (`127.1` → `127.0.0.1`), IPv6 compressed in brackets; no trailing dot. Undefined when it is
 * not a host[:port] (userinfo, paths, spaces …).
 */
export function normalizeHostname(hostAndPort: string): string | undefined {
  if (!HOST_HEADER.test(hostAndPort)) return undefined;
  try {
    return new URL(`http://${hostAndPort}`).hostname.replace(/\.$/, "");
  } catch {
    return undefined;
  }
}

/** `host:port` of a Host header or an origin's authority, normalized (default port dropped); undefined if malformed. */
export function normalizeAuthority(hostAndPort: string): string | undefined {
  if (!HOST_HEADER.test(hostAndPort)) return undefined;
  try {
    const url = new URL(`http://${hostAndPort}`);
    return `${url.hostname.replace(/\.$/, "")}${url.port ? `:${url.port}` : ""}`;
  } catch {
    return undefined;
  }
}

/** True for localhost, *.localhost, 127.x.x.x and [::1]. */
export function isLoopbackHostname(hostname: string): boolean {
  return (
    hostname === "localhost" ||
    hostname.endsWith(".localhost") ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname) ||
    hostname === "[::1]"
  );
}

/**
 * Parses the user's list (local.settings.json `Host.AllowedHosts`, `--allowed-hosts`): names separated by commas,
 * semicolons or spaces; `*.example.com` for a domain and everything below it; `*` for any (turns the guard off).
 * Names only — a port is refused, as ASP.NET Core's AllowedHosts does.
 */
export function parseAllowedHosts(raw: string | undefined, what = "Allowed hosts"): HostAllowList {
  const list: HostAllowList = { any: false, names: new Set(), suffixes: [], listed: [] };
  for (const entry of (raw ?? "").split(/[,;\s]+/).filter((e) => e !== "")) {
    list.listed.push(entry);
    if (entry === "*") {
      list.any = true;
      continue;
    }
    const wildcard = entry.startsWith("*.");
    let body = wildcard ? entry.slice(2) : entry;
    if (!body.startsWith("[") && body.split(":").length > 2) body = `[${body}]`; // a bare IPv6 address
    const hasPort = /:\d*$/.test(body.replace(/^\[[^\]]*\]/, ""));
    const name = hasPort ? undefined : normalizeHostname(body);
    if (name === undefined || name === "") {
      throw new AllowedHostsError(
        `${what}: '${entry}' is not a host name (a name, '*.domain', an IP address or '[IPv6]', without a port; '*' for any).`,
        { code: "InvalidOption" },
      );
    }
    if (wildcard) list.suffixes.push(`.${name}`);
    else list.names.add(name);
  }
  return list;
}

/**
 * Adds the name the server is bound to when it is not a loopback one (e.g. `0.0.0.0`, a LAN address): the dev host's
 * own base URL then names it, and the durable-functions client calls the host through that URL.
 */
export function withBindName(list: HostAllowList, bindHostname: string): HostAllowList {
  const name = normalizeHostname(bindHostname.includes(":") ? `[${bindHostname}]` : bindHostname);
  if (name === undefined || isLoopbackHostname(name) || list.names.has(name)) return list;
  return { ...list, names: new Set([...list.names, name]), listed: [...list.listed, bindHostname] };
}

/** A configured (not loopback) name of the list: an origin on it is trusted by the cross-site guard. */
export function listedHostname(list: HostAllowList, hostname: string): boolean {
  return (
    list.names.has(hostname) || list.suffixes.some((s) => hostname === s.slice(1) || hostname.endsWith(s))
  );
}

/**
 * Why a Host header is refused: 400 when it is not host[:port], 421 when the name is not allowed; `code` and
 * `message` for the response.
 */
export type HostRefusal = { status: 400 | 421; code: string; message: string };

/**
 * Whether a request's Host header may be answered. No Host header (HTTP/1.0; Node refuses it for HTTP/1.1) is
 * answered: a browser always sends one.
 */
export function checkHost(host: string | undefined, list: HostAllowList): HostRefusal | undefined {
  if (host === undefined || list.any) return undefined;
  const hostname = normalizeHostname(host);
  if (hostname === undefined) {
    return {
      status: 400,
      code: "InvalidHost",
      message: `The Host header '${host.slice(0, 200)}' is not host[:port].`,
    };
  }
  if (isLoopbackHostname(hostname) || listedHostname(list, hostname)) return undefined;
  const extra = list.listed.length > 0 ? ` and ${list.listed.join(", ")}` : "";
  return {
    status: 421,
    code: "HostNotAllowed",
    message:
      `The dev host answers requests for localhost, *.localhost, 127.0.0.1 and [::1]${extra}, not '${hostname}' ` +
      "(a guard against DNS rebinding). To reach it under that name, list it in local.settings.json Host.AllowedHosts " +
      "or with --allowed-hosts.",
  };
}

/**
 * checkHost with its verdicts kept by Host header: a client sends the same Host on every request, so each value is
 * parsed (a regular expression and a URL) once, not on every request. At most `maxKept` values are kept — past
 * that the memo starts over —, so a flood of names is not a flood of memory.
 */
const MAX_KEPT_HOST_LENGTH = 300;

/** A memoizing `checkHost` for one allow-list. */
export class HostGuard {
  /** The names answered. */
  readonly list: HostAllowList;
  readonly #maxKept: number;
  /** null: answered. */
  readonly #verdicts = new Map<string, HostRefusal | null>();
  #checked = 0;

  constructor(list: HostAllowList, maxKept = 256) {
    this.list = list;
    this.#maxKept = maxKept;
  }

  /** As `checkHost(host, list)`: undefined when the request may be answered, else why not. */
  check(host: string | undefined): HostRefusal | undefined {
    if (host === undefined || this.list.any) return undefined;
    const kept = this.#verdicts.get(host);
    if (kept !== undefined) return kept ?? undefined;
    const verdict = checkHost(host, this.list);
    this.#checked++;
    // A value longer than any host name (253) and a port is refused anyway, and not worth keeping.
    if (host.length > MAX_KEPT_HOST_LENGTH) return verdict;
    if (this.#verdicts.size >= this.#maxKept) this.#verdicts.clear();
    this.#verdicts.set(host, verdict ?? null);
    return verdict;
  }

  /** How many Host values were parsed and checked (not answered from the memo): for tests. */
  get checked(): number {
    return this.#checked;
  }
}
