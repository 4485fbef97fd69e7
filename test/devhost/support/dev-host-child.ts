// A dev host (no emulator, no triggers that need one) in a process of its own, for tests that kill it: prints
// `{ baseUrl, workerPid }` as one JSON line once it serves, then runs until killed.
import { startDevHost } from "../../../packages/devhost/src/index.js";

const host = await startDevHost({ appDir: process.argv[2], port: 0, logSink: () => {} });
process.stdout.write(`${JSON.stringify({ baseUrl: host.baseUrl, workerPid: host.app.worker.pid })}\n`);
