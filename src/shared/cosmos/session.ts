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
