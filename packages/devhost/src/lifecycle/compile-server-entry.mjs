// The kept-alive --watch compiler's process when the dev host runs from its TypeScript sources: registers tsx,
// then runs compile-server-main.ts. Compiled (the package's dist/), app-compiler.ts starts compile-server-main.js instead.
import { register } from "tsx/esm/api";

register();
await import("./compile-server-main.ts");
