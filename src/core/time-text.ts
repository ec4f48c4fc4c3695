// How the CLI and the dashboard spell times and spans: "4m12s", "5s ago", "2026-06-01 12:00:00.123 UTC".
// No I/O and no dependencies, so the dashboard can use it inside a Worker.

/** A span in the largest whole units that fit, e.g. "3s", "4m12s", "2h5m", "3d4h". @example formatSpan(252_000) // "4m12s" */
export function formatSpan(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (Math.abs(ms) < 1000) return `${Math.round(Math.abs(ms))}ms`;
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ""}`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600) ? `${Math.floor((s % 86400) / 3600)}h` : ""}`;
}

/** "5s ago" or "in 2m" relative to `now`; "-" for no time. @example formatAgo(job.createdAt, new Date()) */
export function formatAgo(at: string | Date | null | undefined, now: Date): string {
  if (!at) return "-";
  const ms = now.getTime() - new Date(at).getTime();
  if (Math.abs(ms) < 1000) return "now";
  return ms >= 0 ? `${formatSpan(ms)} ago` : `in ${formatSpan(ms)}`;
}

/** An absolute time as "2026-06-01 12:00:00.123 UTC"; "-" for none. @example formatTime("2026-06-01T12:00:00Z") */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "-";
  return new Date(iso).toISOString().replace("T", " ").replace("Z", " UTC");
}

/** A millisecond duration for limits: "1m", "30s", "1500ms". @example formatMs(60_000) // "1m" */
export function formatMs(ms: number | null): string {
  return ms === null ? "-" : formatSpan(ms);
}

/** A timestamp as Postgres JSON prints it ("2026-06-01T12:00:00.123+00:00") as an ISO string, or null. @example iso("2026-06-01T12:00:00+00:00") // "2026-06-01T12:00:00.000Z" */
export function iso(value: string | null | undefined): string | null {
  return value == null ? null : new Date(value).toISOString();
}
