// Where akadze's own log lines go: one sink per app (`createApp({ log })`), the console unless told. The
// runtime, the handlers and the routes write every line they log to it; a test captures them with its own
// sink; `akadze dev` reads the lines the handlers keep below their level (`setDevLogSink`). No Node imports:
// the edge handlers use it too.

/**
 * One line akadze logs: how loud it is, a sentence, and the values the sentence names as fields (an error
 * it reports is `fields.error`).
 * @example const record: LogRecord = { level: "warn", message: "job 7 (mail.send, queue default, attempt 1) will retry: Error: refused", fields: { jobId: 7 } };
 */
export interface LogRecord {
  level: "error" | "warn" | "info";
  message: string;
  fields?: Record<string, unknown>;
}

/**
 * Where an app's log lines go. Default `consoleLog`.
 * @example const app = createApp({ log: (r) => logger[r.level]({ ...r.fields }, r.message) });
 */
export type LogSink = (record: LogRecord) => void;

/** The message of the cron handler's summary line (`fields.summary`), which the console prints as JSON. */
export const INVOCATION_SUMMARY = "invocation";

const METHOD = { error: "error", warn: "warn", info: "log" } as const;

/**
 * The default sink: `akadze: <message>` on console.error, console.warn or console.log by level, followed by
 * `fields.error` when the record has one. The cron handler's summary is `akadze invocation <summary as JSON>`.
 * @example consoleLog({ level: "warn", message: "the nudge's budget is short" }); // akadze: the nudge's budget is short
 */
export const consoleLog: LogSink = ({ level, message, fields }) => {
  const write = console[METHOD[level]];
  if (message === INVOCATION_SUMMARY && fields?.summary !== undefined) write(`akadze ${message}`, JSON.stringify(fields.summary));
  else if (fields?.error !== undefined) write(`akadze: ${message}`, fields.error);
  else write(`akadze: ${message}`);
};

/**
 * Where `akadze dev` reads the lines its server's handlers keep below their level (the info line of each
 * nudge and fan-out sibling). On globalThis under a registered symbol: the app module may load its own copy
 * of akadze next to the CLI's.
 */
const DEV_LOG = Symbol.for("akadze.dev.log");

/** Installs (or with undefined removes) the dev terminal's sink. @example setDevLogSink((r) => process.stdout.write(`${r.message}\n`)); */
export function setDevLogSink(sink: LogSink | undefined): void {
  (globalThis as Record<symbol, unknown>)[DEV_LOG] = sink;
}

/** The dev terminal's sink, if `akadze dev` runs in this process. */
export function devLogSink(): LogSink | undefined {
  return (globalThis as Record<symbol, unknown>)[DEV_LOG] as LogSink | undefined;
}
