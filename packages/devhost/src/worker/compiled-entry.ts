// The app's worker process starts here when the dev host runs from compiled JavaScript (the package's dist/,
// which bin/cosmos-feed.js runs): no loader to register, so the app's files are imported by node itself, as under the Node
// worker. From the TypeScript sources (tsx, vitest) entry.mjs starts it instead (process-worker.ts chooses).
import { runWorker } from "./main.js";

runWorker((url) => import(url));
