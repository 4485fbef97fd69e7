/**
 * The docs point at what a reader has: every relative link of every Markdown file resolves to a file or folder of the
 * repository, none reaches outside it (the developers' `../shared/reference` notes are not shipped: cite the public
 * sources), and the README's layout table names every folder there is and only folders that exist.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { linkTargets, plain, readDoc, repoRoot, tableRows } from "../support/markdown.js";

/** Tracked and new (not ignored) files, as paths relative to the repository root. */
const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard"], {
  cwd: repoRoot,
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => f !== "" && existsSync(join(repoRoot, f)));
const markdown = files.filter((f) => f.endsWith(".md"));

describe("links in the docs", () => {
  it("finds the docs to check", () => {
    expect(markdown).toContain("README.md");
    expect(markdown).toContain("docs/tuning.md");
  });

  it("no doc names the developers' notes outside the repository (../shared/reference)", () => {
    const offenders = markdown.filter((f) => /shared\/reference/.test(readDoc(f)));
    expect(offenders).toEqual([]);
  });

  it("every relative link resolves to a path inside the repository", () => {
    const broken: string[] = [];
    for (const f of markdown) {
      for (const target of linkTargets(readDoc(f))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue; // URLs, same-page anchors
        const path = decodeURIComponent(target.split("#")[0]);
        const abs = resolve(repoRoot, dirname(f), path);
        const inside = !relative(repoRoot, abs).startsWith("..");
        if (!inside || !existsSync(abs)) broken.push(`${f}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe("the README's layout table", () => {
  const rows = tableRows(readDoc("README.md"), ["path", "what"]);
  const named = rows.flatMap((r) => [...r[0].matchAll(/`([^`]+)`/g)].map((m) => plain(m[1])));

  it("names only paths that exist", () => {
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((p) => !existsSync(join(repoRoot, p)))).toEqual([]);
  });

  it("names every top-level folder and every folder of src/ and test/", () => {
    const folders = new Set<string>();
    for (const f of files) {
      const parts = f.split("/");
      if (parts.length > 1) folders.add(parts[0]);
      if (parts.length > 2 && (parts[0] === "src" || parts[0] === "test"))
        folders.add(`${parts[0]}/${parts[1]}`);
    }
    // A folder counts as named by itself (with or without its trailing slash) or through a path inside it.
    const listed = named.map((p) => p.replace(/\/$/, ""));
    const missing = [...folders].filter((d) => !listed.some((p) => p === d || p.startsWith(`${d}/`)));
    expect(missing).toEqual([]);
  });
});

describe("docs/durable-design.md's module table", () => {
  it("names exactly the modules of packages/devhost/src/durable", () => {
    const rows = tableRows(readDoc("docs/durable-design.md"), ["module", "role", "pure?"]);
    const modules = files
      .filter((f) => f.startsWith("packages/devhost/src/durable/") && f.endsWith(".ts"))
      .map((f) => f.slice("packages/devhost/src/durable/".length));
    expect(rows.map((r) => plain(r[0])).sort()).toEqual(modules.sort());
  });
});
