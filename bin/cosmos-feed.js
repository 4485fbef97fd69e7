#!/usr/bin/env node
// `npx cosmos-feed …`: runs the TypeScript command line through tsx's loader, in this process (so signals
// reach the CLI directly).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
