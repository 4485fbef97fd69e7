import { ActionType, type OrchestratorAction } from "./types.js";

/**
 * What the dev host's Durable support does not do, said one way everywhere (a failed orchestration's reason, a start-up
 * warning, an HTTP answer's body): the API by name, and that it is a limit of this dev host — not of the app or of
 * Azure Functions — with where it does run. No links: a third-party app has none of this repository's files.
 */

const LIMIT =
  "a limit of this dev host, not of the app or of Azure Functions: it runs under Azure Functions Core Tools (func start) or in Azure";

/**
 * The start of every entity refusal (the dev host's HTTP layer, hostLimits.ts, recognizes "Durable entities are not
 * supported by the dev host" in a failed call's error and puts the reason in the 500's body).
 */
export const ENTITY_REFUSAL = "Durable entities are not supported by the dev host in full";

/** An orchestration's entity action the dev host does not run (`what` names it: "context.df.lock(['@counter@k1'])"). */
export function entityActionRefusal(what: string): string {
  return `${ENTITY_REFUSAL}: the orchestration called ${what}; critical sections are ${LIMIT}.`;
}

/** Rewind (the durable client's rewind, POST instances/{id}/rewind), after the extension's own checks. */
export function rewindRefusal(instanceId: string): string {
  return `Rewind is not supported by the dev host: the durable client's rewind (POST instances/${instanceId}/rewind) is ${LIMIT}. Restart (restartPostUri, the client's restart) is supported.`;
}

/** An entity action as the app wrote it: `context.df.callEntity('@counter@k1', 'add')`, `context.df.lock(…)`. */
export function describeEntityAction(a: OrchestratorAction): string {
  const target = typeof a.instanceId === "string" ? `'${a.instanceId}'` : "";
  const op = typeof a.operation === "string" ? `, '${a.operation}'` : "";
  switch (a.actionType) {
    case ActionType.CallEntity:
      return `context.df.callEntity(${target}${op})`;
    case ActionType.SignalEntity:
      return `context.df.signalEntity(${target}${op})`;
    case ActionType.LockEntities: {
      const set = Array.isArray(a.lockSet) ? (a.lockSet as { name?: string; key?: string }[]) : [];
      return `context.df.lock([${set.map((e) => `'@${e.name}@${e.key}'`).join(", ")}])`;
    }
    default:
      return "the release of a critical section (context.df.lock)";
  }
}
