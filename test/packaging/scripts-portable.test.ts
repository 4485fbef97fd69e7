import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/start-cli.js";

/**
 * What a POSIX shell runs and cmd.exe does not: npm runs scripts with `sh -c` on Linux and macOS and with
 * `cmd /d /s /c` on Windows (npm's `script-shell` default), so a script must mean the same to both.
 */
const POSIX_ONLY: { what: string; pattern: RegExp }[] = [
  { what: "`exec` (a shell builtin cmd.exe does not have)", pattern: /(^|[;&|(]\s*)exec\s/ },
  {
    what: "an environment assignment before a command (FOO=1 cmd)",
    pattern: /(^|[;&|]\s*)[A-Za-z_]\w*=\S*\s+\S/,
  },
  {
    what: "a POSIX command (rm, cp, mv, cat, ls, touch, ln, mkdir -p, chmod, sed)",
    pattern: /(^|[;&|]\s*)(rm|cp|mv|cat|ls|touch|ln|chmod|sed)\s|mkdir\s+-p/,
  },
  { what: "single quotes (cmd.exe passes them on as characters)", pattern: /'/ },
  { what: "a $VARIABLE (cmd.exe has %VARIABLE%)", pattern: /\$[A-Za-z_{(]/ },
  { what: "a backslash line continuation", pattern: /\\\n/ },
  { what: "a ./program invocation (cmd.exe runs no shebang script)", pattern: /(^|[\s;&|])\.\/\S/ },
  { what: "`;` between commands (cmd.exe has `&`)", pattern: /;/ },
  { what: "/dev/null", pattern: /\/dev\/null/ },
  { what: "a POSIX test ([ … ] or test)", pattern: /(^|[;&|]\s*)(\[|test)\s/ },
];

function posixOnly(script: string): string[] {
  return POSIX_ONLY.filter((c) => c.pattern.test(script)).map((c) => c.what);
}

describe("package.json scripts run under cmd.exe as under sh", () => {
  it("flags each POSIX-only construct", () => {
    expect(posixOnly("exec node bin/cosmos-feed.js start .")).toEqual([POSIX_ONLY[0].what]);
    expect(posixOnly("NODE_ENV=production node x.js")).toEqual([POSIX_ONLY[1].what]);
    expect(posixOnly("rm -rf dist && tsc")).toEqual([POSIX_ONLY[2].what]);
    expect(posixOnly("mkdir -p out")).toEqual([POSIX_ONLY[2].what]);
    expect(posixOnly("node -e 'console.log(1)'")).toEqual([POSIX_ONLY[3].what]);
    expect(posixOnly("node x.js $PORT")).toEqual([POSIX_ONLY[4].what]);
    expect(posixOnly("node x.js \\\n --flag")).toEqual([POSIX_ONLY[5].what]);
    expect(posixOnly("./scripts/run.sh")).toEqual([POSIX_ONLY[6].what]);
    expect(posixOnly("tsc; vitest run")).toEqual([POSIX_ONLY[7].what]);
    expect(posixOnly("which func 2>/dev/null")).toEqual([POSIX_ONLY[8].what]);
    expect(posixOnly("[ -x /usr/bin/chromium ] && vitest run")).toEqual([POSIX_ONLY[9].what]);
    // What cmd.exe runs too: node with arguments, npm run, &&, ||, --flags, double quotes.
    expect(
      posixOnly('npm run lint && tsc -p tsconfig.json --noEmit && node "bin/cosmos-feed.js" start .'),
    ).toEqual([]);
  });

  it("has none in package.json", () => {
    const { scripts } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    const found = Object.entries(scripts).flatMap(([name, script]) =>
      posixOnly(script).map((what) => `${name}: ${what} in ${JSON.stringify(script)}`),
    );
    expect(found).toEqual([]);
  });
});
