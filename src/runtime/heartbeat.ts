import { queryJsonWithin } from "./timed-query.js";
import { Cancel, LeaseLost } from "../core/errors.js";
import { heartbeatStatement, type BeatAnswer, type HeldJob } from "../sql/claim/heartbeat.js";
import type { UnheldJobs } from "./unheld-jobs.js";
import type { JobAbort } from "./signal.js";
import { answerTimeoutMs, type EngineContext } from "./engine-context.js";

/**
 * Renews the engine's lease (its owner row, which every job it holds shares, running or prefetched) in one
 * statement every `heartbeatMs`, and aborts the bodies of jobs to cancel (cancel requested, expired) and of
 * jobs whose lease was lost to another engine (`judgeBeat`). An answer judges only the jobs its statement
 * covered: a job claimed while the beat was on its way is not in it and is not taken for lost. The beat names
 * every job the engine knows (held, settling, parked), so jobs leased to the engine that it did not name were
 * claimed meanwhile or are forgotten (a claim's answer lost), and a
 * forgotten job's lease, its owner's, lasts as long as the engine: they are put back before the next claim or
 * at the engine's end, those the engine does not know only (unheld-jobs.ts; nothing, for the former).
 */
export class Heartbeat {
  private timer: ReturnType<typeof setInterval> | undefined;
  private inFlight = false;

  constructor(
    private readonly o: Pick<EngineContext, "db" | "owner" | "leaseMs" | "heartbeatMs" | "sqlNow" | "budget" | "jobs" | "summary" | "change">,
    private readonly unheld: UnheldJobs,
  ) {}

  begin(): void {
    this.timer ??= setInterval(() => void this.beat(), this.o.heartbeatMs);
  }

  end(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One beat; a failed beat is skipped, the lease outlives several intervals. */
  async beat(): Promise<void> {
    if (this.inFlight) return;
    const covered = this.o.jobs.held();
    if (covered.size === 0) return;
    this.inFlight = true;
    try {
      const { db, owner, sqlNow, leaseMs, jobs } = this.o;
      this.o.summary.roundTrip();
      const answer = await queryJsonWithin<BeatAnswer>(db, heartbeatStatement(owner, sqlNow(), leaseMs, jobs.known()),
        answerTimeoutMs(this.o), "a heartbeat");
      if (this.timer === undefined) return;
      judgeBeat(covered, answer.held.map((h) => ({ id: Number(h.id), cancel: h.cancel })), (id) => jobs.controllerOf(id));
      if (Number(answer.unnamed) > 0) this.unheld.mayExist = true;
      this.o.change.notify();
    } catch {
      // The next beat tries again; leases last three intervals.
    } finally {
      this.inFlight = false;
    }
  }
}

/**
 * What a heartbeat answer means for the bodies it covered (and only those, as they were held when it was
 * sent: a job claimed again meanwhile is a new lease the answer knows nothing of): a job no longer held is
 * aborted with LeaseLost; one whose cancel was requested (or that expired) is aborted with Cancel (a job not started yet then never starts).
 */
export function judgeBeat(covered: ReadonlyMap<number, JobAbort>, held: HeldJob[], controllerOf: (id: number) => JobAbort | undefined): void {
  const seen = new Map(held.map((h) => [h.id, h.cancel]));
  for (const [id, sent] of covered) {
    const controller = controllerOf(id);
    if (!controller || controller !== sent) continue;
    if (!seen.has(id)) controller.abort(new LeaseLost(`the lease of job ${id} was lost to another invocation`));
    else if (seen.get(id)) controller.abort(new Cancel(`job ${id} was cancelled or expired while running`));
  }
}
