import { CosmosFeedError } from "@cosmos-feed/core/errors";

/**
 * The dev host refused to start or to load an app. `code` says why: "AppLoad" (unreadable package.json,
 * host.json or local.settings.json; an entry point that throws), "BuildOutputMissing" (`main` matches no file),
 * "NoFunctions" (the app registered nothing), "PortInUse", "DuplicateFunction", "InvalidExtensionBundle" (host.json's
 * extensionBundle), "UnsupportedBinding" (a call needs a binding the dev host cannot serve: hostLimits.ts).
 */
export class DevHostError extends CosmosFeedError {}
