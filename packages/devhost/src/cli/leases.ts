import { CosmosClient } from "@azure/cosmos";
import { DefaultAzureCredential } from "@azure/identity";
import { readConnectionString } from "@cosmos-feed/core/cosmos/client";
import { CliInputError } from "../inputError.js";
import type { LeasesReport } from "../leaseReport.js";

// `cosmos-feed leases`: the report (readLeases, ../leaseReport.ts, which the dashboard reads too) as a table.

export { CliInputError } from "../inputError.js";

/** A client from a connection string or an endpoint (then DefaultAzureCredential: az login, managed identity …). */
export function clientFor(connection: string): CosmosClient {
  const parts = readConnectionString(connection);
  if (parts) return new CosmosClient({ endpoint: parts.endpoint, key: parts.key });
  if (/^https?:\/\//i.test(connection)) {
    return new CosmosClient({ endpoint: connection, aadCredentials: new DefaultAzureCredential() });
  }
  throw new CliInputError(
    "--connection is a Cosmos DB connection string (AccountEndpoint=…;AccountKey=…;) or an account endpoint (https://…, signed in with DefaultAzureCredential).",
  );
}

function age(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}

/** The report as a table, one block per prefix. */
export function formatLeases(report: LeasesReport): string {
  if (report.leases.length === 0) return "No leases in this lease container (or none with that prefix).";
  const lines: string[] = [];
  const prefixes = [...new Set(report.leases.map((l) => l.prefix))];
  for (const prefix of prefixes) {
    const rows = report.leases.filter((l) => l.prefix === prefix);
    const owners = new Set(rows.map((r) => r.owner ?? "(none)"));
    lines.push(`prefix '${prefix}': ${rows.length} lease(s), ${owners.size} owner(s)`);
    const table = [
      ["TOKEN/RANGE", "OWNER", "CONTINUATION", "LAST WRITE", "LAG", "EXPIRED"],
      ...rows.map((r) => [
        r.range ?? r.leaseToken,
        r.owner ?? "(none)",
        r.continuation ?? "(none)",
        `${age(r.lastWriteAgeMs)} ago`,
        r.estimatedLag === null ? "?" : String(r.estimatedLag),
        r.owner === null ? "-" : r.expired ? "yes" : "no",
      ]),
    ];
    const widths = table[0].map((_h, i) => Math.max(...table.map((row) => row[i].length)));
    for (const row of table)
      lines.push(
        `  ${row
          .map((c, i) => c.padEnd(widths[i]))
          .join("  ")
          .trimEnd()}`,
      );
    if (report.lagErrors[prefix]) lines.push(`  lag not estimated: ${report.lagErrors[prefix]}`);
    else if (report.lagNotes[prefix]) lines.push(`  LAG ?: ${report.lagNotes[prefix]}`);
  }
  return lines.join("\n");
}
