import { releaseUnheldStatement } from "../sql/claim/release-unheld.js";
import { answered } from "./settler.js";
import { queryJsonWithin } from "./timed-query.js";
import { answerTimeoutMs, type EngineContext } from "./engine-context.js";

/**
 * Jobs a claim may have leased to an engine that never learnt of them: the claim's answer was lost after it
 * committed (some may even be marked started), so no body will run them; and jobs a failed start request left
 * leased and no longer held (settler.ts). Until they are put back, the engine
 * releases every job leased to its owner that it does not hold, attempt refunded, before its next claim and
 * at its end, so only what may have run is ever charged.
 */
export class UnheldJobs {
  /** A claim's answer was lost: jobs may be leased to this owner that the engine does not know of. */
  mayExist = false;

  constructor(private readonly o: Pick<EngineContext, "db" | "owner" | "budget" | "jobs" | "summary" | "onError">) {}

  /** A claim failed with `error`: unless the database answered (so it did not commit), jobs may be unheld. */
  claimFailed(error: unknown): void {
    if (!answered(error)) this.mayExist = true;
  }

  /** Puts back the jobs leased to the owner that the engine does not know (held, settling or parked); kept for later if it fails too. */
  async release(): Promise<void> {
    if (!this.mayExist) return;
    // Cleared before the statement goes: a job dropped while it is on its way (after it read what the engine
    // holds) sets it again, for the next release.
    this.mayExist = false;
    try {
      this.o.summary.roundTrip();
      const put = await queryJsonWithin<number>(this.o.db, releaseUnheldStatement(this.o.owner, this.o.jobs.known()), answerTimeoutMs(this.o), "a release of unheld jobs");
      this.o.summary.releasedUnheld(put ?? 0);
    } catch (error) {
      this.mayExist = true;
      this.o.onError?.(error);
    }
  }
}
