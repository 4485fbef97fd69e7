// Child process of omit-dev.test.ts: loads an app folder through the dev host's worker contract (it provides
// @azure/functions-core as the Node worker does) and prints what registered, and where the app's packages came from.
import { createRequire } from "node:module";
import { HostLogger, loadApp } from "../../../packages/devhost/src/index.js";

const appDir = process.argv[2] as string;
const app = await loadApp(appDir, { logger: new HostLogger({ sink: () => {} }) });
const cjs = Object.keys(createRequire(import.meta.url).cache);
console.log(
  JSON.stringify({
    functions: app.functions.map((f) => ({ name: f.metadata.name, trigger: f.trigger.type })),
    errors: app.functionErrors,
    // Where the app's own packages were loaded from (CommonJS ones show in the require cache).
    packages: cjs.filter((p) => /node_modules\/(@azure\/functions|durable-functions)\//.test(p)),
  }),
);
