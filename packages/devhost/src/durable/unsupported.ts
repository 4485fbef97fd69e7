/**
 * What the dev host's Durable support does not do, said one way everywhere (a failed orchestration's reason, a start-up
 * warning, an HTTP answer's body): the API by name, and that it is a limit of this dev host — not of the app or of
 * Azure Functions — with where it does run. No links: a third-party app has none of this repository's files.
 */

const LIMIT =
  "a limit of this dev host, not of the app or of Azure Functions: it runs under Azure Functions Core Tools (func start) or in Azure";

/** Rewind (the durable client's rewind, POST instances/{id}/rewind), after the extension's own checks. */
export function rewindRefusal(instanceId: string): string {
  return `Rewind is not supported by the dev host: the durable client's rewind (POST instances/${instanceId}/rewind) is ${LIMIT}. Restart (restartPostUri, the client's restart) is supported.`;
}
