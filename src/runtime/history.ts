import type { SQL } from "drizzle-orm";
import type { App } from "../app/app.js";
import { historyPartitioning, type HistoryPartitioning, type RetentionPlan } from "../core/retention.js";
import { queryJson, type Db } from "../db/query.js";
import { historyDue, maintainHistoryStatement, type HistoryMaintenance } from "../sql/history/maintain-history.js";
import type { ClaimRider, Ride } from "./rider.js";
import { memoryOf } from "./process-memory.js";

/** Said once per process: the role may not create or drop the history's partitions. */
let deniedSaid = false;

/**
 * Keeps the history within its retention beside the claims: a claim (at most every `everyMs` per app in this
 * process, or every first claim of an invocation on a caller's clock) reports whether the history has work
 * (`akadze.history_due`), and only then one maintenance statement runs beside the next claims: partitions past
 * the horizon dropped, partitions made ahead, leftover rows deleted. A role that may not create or drop
 * tables falls back to row deletes, and this says so once in the log.
 */
export class HistoryKeeper implements ClaimRider {
  readonly name = "history";
  private readonly partitioning: HistoryPartitioning;
  private running: Promise<void> | null = null;
  private firstDone = false;

  constructor(private readonly o: {
    app: App; db: Db; plan: RetentionPlan; sqlNow: () => SQL;
    /** A caller's clock drives the statements: the first claim always checks (tests move the clock by days). */
    callerClock: boolean;
  }) {
    this.partitioning = historyPartitioning(o.plan.finishedMs);
  }

  /** Rides on a claim that should ask whether the history has work; the answer runs the maintenance if it has. */
  ride(): Ride | null {
    const first = !this.firstDone;
    this.firstDone = true;
    if (this.running) return null;
    const memory = memoryOf(this.o.app);
    if (!(first && this.o.callerClock) && Date.now() - memory.historyCheckedAt < this.partitioning.everyMs) return null;
    memory.historyCheckedAt = Date.now();
    return {
      report: { historyDue: historyDue(this.o.sqlNow(), this.o.plan.finishedMs, this.partitioning) },
      answered: (answer, count) => { this.maintain(answer.historyDue, count); },
    };
  }

  /** Runs the maintenance when the history had work (`count` is told of the statement). */
  private maintain(due: boolean | undefined, count: () => void): void {
    if (!due || this.running) return;
    count();
    const statement = maintainHistoryStatement(this.o.sqlNow(), this.o.plan.finishedMs, this.partitioning, this.o.plan.batch);
    this.running = queryJson<HistoryMaintenance>(this.o.db, statement).then((done) => {
      if (done?.denied && !deniedSaid) {
        deniedSaid = true;
        this.o.app.log({ level: "warn", message: `the history's partitions cannot be made or dropped by this role (${done.denied}); ` +
          "finished jobs are pruned row by row instead. Run `akadze migrate` as the tables' owner, or grant it.", fields: { denied: done.denied } });
      }
    }, () => {}).finally(() => { this.running = null; });
  }

  /** Resolves when the maintenance this keeper started (if any) has ended. */
  finished(): Promise<void> {
    return this.running ?? Promise.resolve();
  }
}
