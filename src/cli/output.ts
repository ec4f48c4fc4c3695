import Table from "cli-table3";

/** A column: its header and how to show a row's cell. */
export type Column<T> = [header: string, cell: (row: T) => string | number];

// kubectl-like plain columns: easy to read, easy to grep and cut.
const PLAIN = {
  top: "", "top-mid": "", "top-left": "", "top-right": "", bottom: "", "bottom-mid": "", "bottom-left": "", "bottom-right": "",
  left: "", "left-mid": "", mid: "", "mid-mid": "", right: "", "right-mid": "", middle: "  ",
};

/** Rows as an aligned table with a header line. */
export function renderTable<T>(rows: T[], columns: Column<T>[]): string {
  const table = new Table({ head: columns.map(([h]) => h), chars: PLAIN, style: { "padding-left": 0, "padding-right": 0, head: [], border: [] } });
  for (const row of rows) table.push(columns.map(([, cell]) => String(cell(row))));
  return table.toString().split("\n").map((line) => line.trimEnd()).join("\n");
}

/** Label/value lines, for one record. */
export function renderFields(fields: [string, string | number][]): string {
  const table = new Table({ chars: PLAIN, style: { "padding-left": 0, "padding-right": 0, head: [], border: [] } });
  for (const [label, value] of fields) table.push([label, String(value)]);
  return table.toString().split("\n").map((line) => line.trimEnd()).join("\n");
}

/** Writes the text with a final newline. */
export function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

export function printJson(value: unknown): void {
  print(JSON.stringify(value, null, 2));
}

/** A listing: the rows as JSON with --json, else a table, or `empty` when there are none. */
export function printRows<T>(json: boolean, rows: T[], empty: string, columns: Column<T>[]): void {
  if (json) return printJson(rows);
  print(rows.length === 0 ? empty : renderTable(rows, columns));
}

/** A span in the largest whole units that fit, e.g. "3s", "4m12s", "2h5m", "3d4h". */
export function formatSpan(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000);
  if (Math.abs(ms) < 1000) return `${Math.round(Math.abs(ms))}ms`;
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ""}`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600) ? `${Math.floor((s % 86400) / 3600)}h` : ""}`;
}

/** "5s ago" or "in 2m" relative to `now`; "-" for no time. */
export function formatAgo(iso: string | null | undefined, now: Date): string {
  if (!iso) return "-";
  const ms = now.getTime() - new Date(iso).getTime();
  if (Math.abs(ms) < 1000) return "now";
  return ms >= 0 ? `${formatSpan(ms)} ago` : `in ${formatSpan(ms)}`;
}

/** An absolute time as "2026-06-01 12:00:00.123 UTC"; "-" for none. */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "-";
  return new Date(iso).toISOString().replace("T", " ").replace("Z", " UTC");
}

/** A millisecond duration for limits: "1m", "30s", "1500ms". */
export function formatMs(ms: number | null): string {
  return ms === null ? "-" : formatSpan(ms);
}
