import Table from "cli-table3";

// The time formats live in core so the dashboard shows times as the CLI does, without cli-table3.
export { formatAgo, formatMs, formatSpan, formatTime } from "../core/time-text.js";

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
