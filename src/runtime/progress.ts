// job.progress(value) and job.log(...): what a run reports of itself, written coalesced so that a body
// reporting in a tight loop costs a bounded number of statements (one in flight per run, the latest pending).
import type { SQL } from "drizzle-orm";
import { InvalidInput } from "../core/errors.js";
import { cleanText, jsonProblem } from "../core/json.js";
import type { Db } from "../db/query.js";
import { MAX_LOG_BYTES, MAX_LOG_LINES, writeProgressStatement, type ProgressWrite } from "../sql/settle/write-progress.js";

/** The largest progress value, as JSON text in UTF-8: progress is a small status for a page, not a result. */
export const MAX_PROGRESS_BYTES = 16_384;
/** A log line longer than this many characters is cut, saying how many were cut. */
export const MAX_LOG_LINE_CHARS = 8_192;
/** A run writes its reports at most this often (ms, monotonic): a loop of 10,000 calls costs a few statements. */
export const PROGRESS_WRITE_SPACING_MS = 250;

/** What a run's reports need of it. */
export interface ProgressRun {
  db: Db;
  jobId: number;
  owner: string;
  attempt: number;
  /** The invocation's clock, for each log line's time. */
  now: () => Date;
  /** The statement's time (the invocation's clock, or the database's). */
  sqlNow: () => SQL;
}

const encoder = new TextEncoder();

/** UTF-8 length, measured only when it could matter (a character is 1 to 3 bytes per UTF-16 unit). */
function bytesOver(text: string, limit: number): number | null {
  if (text.length * 3 <= limit) return null;
  const bytes = encoder.encode(text).length;
  return bytes > limit ? bytes : null;
}

/**
 * One run's reports: the latest progress and the log lines not written yet. Writes go out one at a time; while
 * one is in flight (or the spacing has not passed), later calls only replace the pending progress and add
 * lines, and the next write carries them all. `close` writes what is pending before the run's outcome is
 * recorded, and ignores anything reported after it.
 */
export class RunProgress {
  private pendingProgress: string | null = null;
  private pendingLines: { message: string; at: string }[] = [];
  /** Lines this run dropped itself (the log was already full by its own count) since the last write. */
  private droppedLines = 0;
  /** This run's lines and their length so far: past the job's caps no line can be kept, so none is sent. */
  private offeredLines = 0;
  private offeredChars = 0;
  private writing: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastWriteAt = -Infinity;
  private closed = false;

  constructor(private readonly run: ProgressRun) {}

  /** Sets the job's progress (any JSON value of at most MAX_PROGRESS_BYTES); throws InvalidInput otherwise. */
  progress(value: unknown): void {
    const problem = jsonProblem(value, "progress");
    if (problem !== null) throw new InvalidInput(`job.progress takes a JSON value: ${problem}`);
    const text = JSON.stringify(value);
    const bytes = bytesOver(text, MAX_PROGRESS_BYTES);
    if (bytes !== null) {
      throw new InvalidInput(`job.progress takes at most ${MAX_PROGRESS_BYTES} bytes of JSON, and this value is ${bytes}: ` +
        "report a small status (a count, a percentage, a phase) and return the rest as the result");
    }
    if (this.closed) return;
    this.pendingProgress = text;
    this.request();
  }

  /** Adds a log line: the parts joined by spaces (strings as they are, errors by their message, the rest as JSON). */
  log(parts: unknown[]): void {
    if (this.closed) return;
    const line = logLine(parts);
    this.offeredLines++;
    this.offeredChars += line.length;
    // (A UTF-8 byte count is at least the UTF-16 length, so past either cap by these counts the line cannot fit.)
    if (this.offeredLines > MAX_LOG_LINES || this.offeredChars > MAX_LOG_BYTES) {
      this.droppedLines++;
    } else {
      this.pendingLines.push({ message: line, at: this.run.now().toISOString() });
    }
    this.request();
  }

  /** Writes what is pending (after the write in flight, if any); reports made after it are ignored. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.writing !== null) await this.writing;
    // One last write at most: a failing database is not tried again and again while the outcome waits.
    if (this.hasPending()) {
      this.write();
      await this.writing;
    }
  }

  private hasPending(): boolean {
    return this.pendingProgress !== null || this.pendingLines.length > 0 || this.droppedLines > 0;
  }

  /** Starts a write now, or once the write in flight ends, or once the spacing has passed. */
  private request(): void {
    if (this.writing !== null || this.timer !== null) return;
    const wait = this.lastWriteAt + PROGRESS_WRITE_SPACING_MS - performance.now();
    if (wait <= 0) {
      this.write();
    } else {
      this.timer = setTimeout(() => {
        this.timer = null;
        if (this.writing === null && this.hasPending()) this.write();
      }, wait);
      // (In Node, a pending write does not keep the process alive: `close` writes it before the outcome anyway.)
      (this.timer as { unref?: () => void }).unref?.();
    }
  }

  private write(): void {
    const { db, jobId, owner, attempt } = this.run;
    const write: ProgressWrite = { jobId, owner, attempt, progress: this.pendingProgress, lines: this.pendingLines, dropped: this.droppedLines };
    this.pendingProgress = null;
    this.pendingLines = [];
    this.droppedLines = 0;
    this.lastWriteAt = performance.now();
    this.writing = Promise.resolve()
      .then(() => db.execute(writeProgressStatement(write, this.run.sqlNow())))
      .then(() => {}, () => {
        // Reports are best effort: a failed write never fails the job. Its progress is sent again unless a
        // newer one is pending; its lines are counted as dropped.
        this.pendingProgress ??= write.progress;
        this.droppedLines += write.lines.length + write.dropped;
      })
      .then(() => {
        this.writing = null;
        if (!this.closed && this.hasPending()) this.request();
      });
  }
}

/** A log line from `job.log`'s arguments, storable as text and at most MAX_LOG_LINE_CHARS long. */
export function logLine(parts: unknown[]): string {
  const text = cleanText(parts.map(partText).join(" "));
  return text.length > MAX_LOG_LINE_CHARS ? `${text.slice(0, MAX_LOG_LINE_CHARS)}… (${text.length - MAX_LOG_LINE_CHARS} more characters)` : text;
}

function partText(part: unknown): string {
  if (typeof part === "string") return part;
  if (part instanceof Error) return `${part.name}: ${part.message}`;
  if (part === undefined || typeof part === "function" || typeof part === "symbol" || typeof part === "bigint") return String(part);
  try {
    return JSON.stringify(part) ?? String(part);
  } catch {
    return String(part);
  }
}
