import { CosmosFeedError } from "../shared/errors.js";

/**
 * The dev host refused to start or to load an app. `code` says why: "AppLoad" (unreadable package.json,
 * host.json or local.settings.json; an entry point that throws), "BuildOutputMissing" (`main` matches no file),
 * "NoFunctions" (the app registered nothing), "PortInUse", "DuplicateFunction".
 */
export class DevHostError extends CosmosFeedError {}
