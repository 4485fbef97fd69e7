// Azure Functions Core Tools' `func` for the scripts that run it: its file names (func.cmd or func.exe on Windows;
// the first is what they spawn) and whether one of them is on PATH.
import { existsSync } from "node:fs";
import { delimiter, join } from "node:path";

export const funcExecutables = process.platform === "win32" ? ["func.cmd", "func.exe"] : ["func"];

export function funcOnPath() {
  return (process.env.PATH ?? "")
    .split(delimiter)
    .filter(Boolean)
    .some((dir) => funcExecutables.some((name) => existsSync(join(dir, name))));
}
