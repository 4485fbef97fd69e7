/**
 * Phase 5's baseline in a process of its own: the fixture's handler module (its path is the one argument) on bare
 * node:http, `/api/<name>` → the exported handler `<name>`. Prints `listening <url>` once it listens.
 *
 *   node --import tsx bench/app/bare-child.ts <handlers.js>
 */
import { pathToFileURL } from "node:url";
import { type BareRoute, bareServer, type Handler } from "./bare-server.js";

const file = process.argv[2];
if (!file) {
  console.error("usage: bare-child.ts <handlers module>");
  process.exit(2);
}
const handlers = (await import(pathToFileURL(file).href)) as Record<string, Handler>;
const routes: BareRoute[] = Object.entries(handlers).map(([name, handler]) => ({
  pattern: new RegExp(`^/api/${name}$`),
  handler,
}));
const { url } = await bareServer(routes);
console.log(`listening ${url}`);
// The bench stops this child with SIGTERM; when the bench is gone (its end of stdin closed), the child goes too.
process.on("SIGTERM", () => process.exit(0));
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
