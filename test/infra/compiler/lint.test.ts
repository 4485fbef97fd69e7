/**
 * infra/bicep/bicepconfig.json is live: the compiler ignores a rule name it does not know, so a misspelt rule would
 * silently check nothing. A fixture breaks the rules that matter, each on a line whose comment names it; linted with
 * that configuration by the pinned Bicep, every named rule must be reported there, as an error.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bicep, bicepConfig, type Diagnostic, root, sarifDiagnostics } from "./support/bicep.js";

const fixture = join("test", "infra", "compiler", "fixtures", "lint", "breaks-rules.bicep");

/** The configuration's rules and levels (the file is JSON with whole-line // comments, as Bicep allows). */
function configuredRules(): Record<string, { level: string }> {
  const text = readFileSync(bicepConfig, "utf8")
    .split("\n")
    .filter((line) => !line.trimStart().startsWith("//"))
    .join("\n");
  return (JSON.parse(text) as { analyzers: { core: { rules: Record<string, { level: string }> } } }).analyzers
    .core.rules;
}

/** Line number → the rule codes its trailing comment names. */
function expectedByLine(): Map<number, string[]> {
  const out = new Map<number, string[]>();
  readFileSync(join(root, fixture), "utf8")
    .split("\n")
    .forEach((line, i) => {
      const comment = /\/\/ ((?:[a-z]+(?:-[a-z0-9]+)+\s*)+)$/.exec(line);
      if (comment) out.set(i + 1, comment[1].trim().split(/\s+/));
    });
  return out;
}

let diagnostics: Diagnostic[];

beforeAll(async () => {
  const run = await bicep(["lint", fixture, "--config", bicepConfig, "--diagnostics-format", "sarif"]);
  expect(run.status).not.toBe(0); // errors make the exit status non-zero
  // `lint` writes its SARIF log to stdout (`build` to stderr, its stdout being the template).
  diagnostics = sarifDiagnostics(run.stdout);
});

describe("bicepconfig.json: the rules that matter are known to the pinned Bicep and are errors", () => {
  it("the fixture names the rules the project relies on most", () => {
    const named = [...expectedByLine().values()].flat();
    for (const rule of [
      "secure-secrets-in-params",
      "secure-parameter-default",
      "outputs-should-not-contain-secrets",
      "no-hardcoded-env-urls",
      "no-unused-params",
      "no-unused-vars",
      "no-unused-existing-resources",
      "use-resource-symbol-reference",
      "no-unnecessary-dependson",
      "use-recent-api-versions",
      "use-user-defined-types",
      "use-safe-access",
    ]) {
      expect(named, rule).toContain(rule);
    }
  });

  it("each rule a fixture line names is reported on that line, at error level, and configured as an error", () => {
    const rules = configuredRules();
    const expected = expectedByLine();
    expect(expected.size).toBeGreaterThanOrEqual(15);
    for (const [line, codes] of expected) {
      for (const code of codes) {
        expect(rules[code]?.level, `${code} in bicepconfig.json`).toBe("error");
        const found = diagnostics.filter((d) => d.line === line && d.code === code);
        expect(
          found.map((d) => d.level),
          `${fixture}:${line} ${code}; reported there: ${diagnostics
            .filter((d) => d.line === line)
            .map((d) => d.code)
            .join(", ")}`,
        ).toEqual(["error"]);
      }
    }
  });

  it("every rule that is off says why, in a comment just above it (or above the rules off for the same reason)", () => {
    const lines = readFileSync(bicepConfig, "utf8").split("\n");
    const off = Object.entries(configuredRules()).filter(([, r]) => r.level === "off");
    expect(off.length).toBeGreaterThan(0);
    for (const [rule] of off) {
      let above = lines.findIndex((l) => l.includes(`"${rule}"`)) - 1;
      while (above > 0 && /^\s*"[a-z-]+": \{ "level": "off" \},?$/.test(lines[above] ?? "")) above--;
      expect(lines[above]?.trimStart().startsWith("//"), rule).toBe(true);
    }
    // Nothing is left at "warning": `bicep build` must stop on what the configuration turns on.
    expect(Object.entries(configuredRules()).filter(([, r]) => r.level === "warning")).toEqual([]);
  });
});
