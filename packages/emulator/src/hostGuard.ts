import { networkInterfaces } from "node:os";
import { CosmosError } from "./errors.js";
import {
  type HostAllowList,
  isLoopbackHostname,
  listedHostname,
  normalizeHostname,
  parseAllowedHosts,
  withBindName,
} from "./hosts.js";

/**
 * The emulator's DNS-rebinding guard, the dev host's (packages/emulator/src/hosts.ts) on the emulator's port: a web page
 * whose name an attacker rebinds to 127.0.0.1 could otherwise sign requests with the published emulator key and
 * read or write every document (the durable task hub's inputs and outputs among them). A browser always sends the
 * page's own name as Host, so only these are answered: loopback names (localhost, *.localhost, 127.0.0.0/8,
 * [::1]), the address the emulator is bound to — every interface's address when that is 0.0.0.0 or :: — and the
 * names of the allow-list (`--allowed-hosts`, COSMOS_EMULATOR_ALLOWED_HOSTS; `*` turns the guard off).
 */

/** The environment variable `cosmos-feed emulator` reads its allow-list from when --allowed-hosts is not given. */
export const ALLOWED_HOSTS_ENV = "COSMOS_EMULATOR_ALLOWED_HOSTS";

const WILDCARD_BINDS = new Set(["0.0.0.0", "::", "[::]"]);

function interfaceAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** The allow-list of an emulator bound to `bindHost`; throws (code InvalidOption) on a malformed entry. */
export function emulatorAllowList(bindHost: string, allowedHosts: string | undefined): HostAllowList {
  let list = parseAllowedHosts(allowedHosts, "--allowed-hosts");
  const bound = WILDCARD_BINDS.has(bindHost) ? interfaceAddresses() : [bindHost];
  for (const address of bound) list = withBindName(list, address.replace(/^\[|\]$/g, ""));
  return list;
}

/** Host header values answered lately, per allow-list: a client sends the same one with every request. */
const answeredHosts = new WeakMap<HostAllowList, Set<string>>();
const ANSWERED_HOSTS_REMEMBERED = 64;

/** The 421 a request for a host name not on the list gets (nothing is read or written), or undefined. */
export function hostRefusal(
  host: string | string[] | undefined,
  list: HostAllowList,
): CosmosError | undefined {
  if (host === undefined || list.any) return undefined;
  const value = Array.isArray(host) ? host.join(",") : host;
  const answered = answeredHosts.get(list);
  if (answered?.has(value)) return undefined;
  const refusal = refusalOf(value, list);
  if (!refusal) {
    const set = answered ?? new Set<string>();
    if (set.size >= ANSWERED_HOSTS_REMEMBERED) set.clear();
    set.add(value);
    answeredHosts.set(list, set);
  }
  return refusal;
}

function refusalOf(value: string, list: HostAllowList): CosmosError | undefined {
  const hostname = normalizeHostname(value);
  if (hostname === undefined) {
    return new CosmosError(400, "BadRequest", `The Host header '${value.slice(0, 200)}' is not host[:port].`);
  }
  if (isLoopbackHostname(hostname) || listedHostname(list, hostname)) return undefined;
  const extra = list.listed.length > 0 ? `, ${list.listed.join(", ")}` : "";
  return new CosmosError(
    421,
    "HostNotAllowed",
    `This emulator answers requests for localhost, *.localhost, 127.0.0.1 and [::1]${extra}, not '${hostname}' ` +
      `(a guard against DNS rebinding). To reach it under that name, list it with --allowed-hosts or ${ALLOWED_HOSTS_ENV}.`,
  );
}
