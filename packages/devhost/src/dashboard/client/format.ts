/** Text formatting for the page, without the DOM. */

/** "850 ms", "12 s", "3 min", "2 h". */
export function duration(ms: number): string {
  const a = Math.abs(ms);
  const sign = ms < 0 ? "−" : "";
  if (a < 1000) return `${sign}${Math.round(a)} ms`;
  if (a < 120_000) return `${sign}${Math.round(a / 1000)} s`;
  if (a < 7_200_000) return `${sign}${Math.round(a / 60_000)} min`;
  return `${sign}${Math.round(a / 3_600_000)} h`;
}

/**
 * A configured interval as set, not rounded: "500 ms", "1.5 s", "2 s", "1.25 s" (the status line says how often the
 * page refreshes; `duration` would show the default 1500 ms as "2 s").
 */
export function interval(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(2))} s`;
}

/** RU figures: two decimals below 10, one below 100, none above. */
export function ru(n: number): string {
  if (n < 10) return n.toFixed(2);
  if (n < 100) return n.toFixed(1);
  return Math.round(n).toString();
}

/** An owner name short enough for a table cell (UUIDs → first 8 characters). */
export function shortOwner(owner: string | null): string {
  if (owner === null) return "(none)";
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(owner) ? owner.slice(0, 8) : owner;
}

/** "12:03:04" in local time. */
export function clock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleTimeString([], { hour12: false });
}
