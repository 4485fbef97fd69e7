// The app's worker process starts here (spawned by packages/devhost/src/worker/process-worker.ts). The dev host's own
// worker code is TypeScript, loaded through tsx in a namespace of its own, so that the app's files are imported by
// node itself with no loader hook in between: `importModule` below is a plain import() from this plain module.
import { register } from "tsx/esm/api";

// tsx turns source maps on for the whole process; the Node worker runs the app without them (unless NODE_OPTIONS
// asks), so an app's stack traces name its built files, not its sources: put the setting back as node started.
const sourceMaps = process.sourceMapsEnabled;
const api = register({ namespace: "cosmos-feed-worker" });
const { runWorker } = await api.import("./main.ts", import.meta.url);
process.setSourceMapsEnabled(sourceMaps);
runWorker((url) => import(url));
