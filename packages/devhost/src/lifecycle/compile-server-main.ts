// The kept-alive --watch compiler's process (started by app-compiler.ts): `<appDir> <tsconfig>` as arguments, the
// dev host's requests over the IPC channel. It ends with the channel (its dev host stopped, or was killed).
import { type FromCompiler, serveCompiles, type ToCompiler } from "./compile-server.js";

const [appDir, tsconfig] = process.argv.slice(2);
const send = (m: FromCompiler) => process.send?.(m);
try {
  const compile = serveCompiles(appDir, tsconfig, send);
  process.on("message", (m: ToCompiler) => compile(m));
} catch (e) {
  send({ kind: "failed", reason: (e as Error)?.message ?? String(e) });
}
process.on("disconnect", () => process.exit(0));
