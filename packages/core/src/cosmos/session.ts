/**
 * The global LSN in a session token (`<range>:-1#<globalLsn>[#<region>=<lsn>]`, or the legacy `<range>:<lsn>`;
 * several comma-separated tokens: the first). LSNs increase with every write to a physical partition and keep
 * increasing in the children after a split.
 */
export function sessionTokenLsn(token: string | undefined): number | undefined {
  if (!token) return undefined;
  const first = token.split(",")[0];
  const afterColon = first.slice(first.indexOf(":") + 1);
  const parts = afterColon.split("#");
  const n = Number(parts.length >= 2 ? parts[1] : parts[0]);
  return Number.isFinite(n) ? n : undefined;
}

/** The id of the partition key range that issued a session token (`<range>:…`; several: the first). */
export function sessionTokenRangeId(token: string | undefined): string | undefined {
  if (!token) return undefined;
  const first = token.split(",")[0];
  const colon = first.indexOf(":");
  return colon > 0 ? first.slice(0, colon) : undefined;
}
