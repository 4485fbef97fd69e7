/**
 * Reading the repository's Markdown the way a doc test needs it: a file's text, the rows of the table under a given
 * header, and every link target. Enough of Markdown for our docs (GitHub tables, inline links), not a parser.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = fileURLToPath(new URL("../..", import.meta.url));

export function readDoc(path: string): string {
  return readFileSync(join(repoRoot, path), "utf8");
}

/** A table row's cells, trimmed; `|` inside backticks does not split (e.g. `a | b`). */
function cells(line: string): string[] {
  const out: string[] = [];
  let cell = "";
  let code = false;
  const body = line.trim().replace(/^\|/, "").replace(/\|$/, "");
  for (const ch of body) {
    if (ch === "`") code = !code;
    if (ch === "|" && !code) {
      out.push(cell.trim());
      cell = "";
    } else cell += ch;
  }
  out.push(cell.trim());
  return out;
}

/**
 * The body rows of the first table whose header row's cells are exactly `header` (case-insensitive); throws when
 * there is none, so a renamed column fails the test instead of checking nothing.
 */
export function tableRows(markdown: string, header: readonly string[]): string[][] {
  const lines = markdown.split("\n");
  const want = header.map((h) => h.toLowerCase());
  for (let i = 0; i < lines.length - 1; i++) {
    if (!lines[i].trim().startsWith("|")) continue;
    const got = cells(lines[i]).map((c) => c.toLowerCase());
    if (got.length !== want.length || got.some((c, k) => c !== want[k])) continue;
    const rows: string[][] = [];
    for (let j = i + 2; j < lines.length && lines[j].trim().startsWith("|"); j++) rows.push(cells(lines[j]));
    return rows;
  }
  throw new Error(`no table with the header | ${header.join(" | ")} |`);
}

/** A cell without its backticks: "`1000`" → "1000". */
export function plain(cell: string): string {
  return cell.replace(/`/g, "").trim();
}

/** Every inline link and image target of a Markdown text (`[x](target)`, `![x](target)`), fenced code left out. */
export function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^```[\s\S]*?^```/gm, "");
  return [...prose.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]);
}
