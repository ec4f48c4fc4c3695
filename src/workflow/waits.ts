// A workflow's waits: `step.sleep`/`sleepUntil` park the run until a time, `step.waitForEvent` until
// `sendEvent` delivers a matching event or its timeout, with no attempt spent either way.
import { parseDuration } from "../core/duration.js";
import { InvalidInput } from "../core/errors.js";
import { jsonProblem } from "../core/json.js";
import { NameSchema, parseOrThrow } from "../core/validate.js";
import { queryJson } from "../db/query.js";
import { timeOutWaitStatement } from "../sql/workflow/time-out-wait.js";
import { timestamp } from "../sql/time.js";
import type { StepName, WaitForEventOptions } from "../app/step.js";
import type { WorkflowRun } from "./workflow-run.js";

/** A sleep step: done once its time has come, else stored (once) and the run parks until then. */
export async function sleepStep(r: WorkflowRun, step: StepName, at: Date): Promise<void> {
  const { seq, name } = r.enter(step, "sleep");
  const stored = r.journal.steps.get(name);
  if (stored?.state === "done") return;
  const wakeAt = stored?.wakeAt ? new Date(stored.wakeAt) : at;
  if (!(wakeAt instanceof Date) || Number.isNaN(wakeAt.getTime())) throw r.fail(new InvalidInput(`step ${JSON.stringify(name)}: sleepUntil needs a valid Date`));
  if (wakeAt.getTime() <= r.now()) {
    await r.save(r.db, { name, seq, kind: "sleep", state: "done", attempts: 1, wakeAt });
    return;
  }
  if (!stored) await r.save(r.db, { name, seq, kind: "sleep", state: "waiting", attempts: 1, wakeAt });
  throw r.park(wakeAt.getTime() - r.now());
}

/** An event wait: the delivered payload, null once its timeout was recorded, else the run parks. */
export async function waitStep<T>(r: WorkflowRun, step: StepName, options: WaitForEventOptions): Promise<T | null> {
  const { seq, name } = r.enter(step, "event");
  const stored = r.journal.steps.get(name);
  if (stored?.state === "done") return stored.result as T;
  if (stored?.state === "timed_out") return null;
  if (!stored) {
    const { event, match, timeoutMs } = checkWait(r, name, options);
    const wakeAt = new Date(r.now() + timeoutMs);
    await r.save(r.db, { name, seq, kind: "event", state: "waiting", attempts: 1, wakeAt, event, match: match ?? undefined });
    r.waiting.add(name);
    throw r.park(timeoutMs);
  }
  const wakeAt = new Date(stored.wakeAt!).getTime();
  if (wakeAt > r.now()) {
    r.waiting.add(name);
    throw r.park(wakeAt - r.now());
  }
  const won = await queryJson<boolean>(r.db, timeOutWaitStatement(r.job.id, name, timestamp(r.job.runtime.now())));
  if (won) return null;
  // An event reached the step just before its timeout was recorded: it counts.
  await r.load();
  return r.journal.steps.get(name)!.result as T;
}

/** A wait's options, checked (InvalidInput fails the run's step, naming the option). */
function checkWait(r: WorkflowRun, name: string, options: WaitForEventOptions): { event: string; match: Record<string, unknown> | null; timeoutMs: number } {
  const what = `step ${JSON.stringify(name)}: waitForEvent`;
  if (typeof options !== "object" || options === null) throw r.fail(new InvalidInput(`${what} needs options { timeout }`));
  const event = options.event ?? name;
  let timeoutMs: number;
  try {
    parseOrThrow(NameSchema, event, `${what} event name`);
    timeoutMs = parseDuration(options.timeout, `${what} timeout`);
  } catch (error) { throw r.fail(new InvalidInput((error as Error).message)); }
  const match = options.match ?? null;
  if (match !== null && (typeof match !== "object" || Array.isArray(match) || jsonProblem(match, "match") !== null)) {
    throw r.fail(new InvalidInput(`${what} match must be a JSON object (the payload must contain it)`));
  }
  return { event, match, timeoutMs };
}
