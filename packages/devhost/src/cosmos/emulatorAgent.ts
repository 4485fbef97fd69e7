import { Agent } from "node:https";
import { isLoopbackHostname, normalizeHostname } from "@cosmos-feed/emulator/hosts";

/**
 * The dev host's own Cosmos DB clients (triggers, bindings, the durable task hub, the dashboard) and the embedded
 * emulator's certificate. The worker process trusts it through NODE_EXTRA_CA_CERTS (read when a process starts);
 * the dev host's process started before the certificate was made, and Node 20 cannot add a root to a running
 * process, so its clients of the emulator get an HTTPS agent that trusts that certificate — for the emulator's
 * port on loopback names only; every other endpoint keeps the SDK's default agent and the system's roots.
 */

const agents = new Map<number, Agent>();

/** Trusts `certPem` for https://<loopback>:`port`/ in this process's clients; returns the undo. */
export function trustEmulatorCertificate(port: number, certPem: string): () => void {
  const agent = new Agent({ keepAlive: true, minVersion: "TLSv1.2", ca: certPem });
  agents.set(port, agent);
  return () => {
    if (agents.get(port) === agent) agents.delete(port);
    agent.destroy();
  };
}

/** The agent for a client of `endpoint`: the emulator's when it is that emulator over HTTPS, else undefined. */
export function emulatorAgent(endpoint: string): Agent | undefined {
  if (agents.size === 0) return undefined;
  try {
    const url = new URL(endpoint);
    const hostname = normalizeHostname(url.host);
    if (url.protocol !== "https:" || hostname === undefined || !isLoopbackHostname(hostname))
      return undefined;
    return agents.get(Number(url.port || 443));
  } catch {
    return undefined;
  }
}
