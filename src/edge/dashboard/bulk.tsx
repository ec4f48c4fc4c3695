// The jobs list's bulk actions: cancel, requeue or replay every job its filter shows (the same functions as
// `akadze jobs cancel|requeue|replay` with a selection), each button labelled with its dry run's count.
import type { App } from "../../app/app.js";
import type { JobState } from "../../core/states.js";
import type { Db } from "../../db/query.js";
import type { JobSelection } from "../../ops/job-selection.js";
import { BULK_OPERATIONS, type BulkOperation } from "../bulk-routes.js";
import { Post, type PageContext } from "./layout.js";

/** The jobs list's filters as the query string carries them: what the list shows, and what a bulk action acts on. */
export interface JobsQuery { state?: string; queue?: string; task?: string; before?: number }

/** What each bulk operation's button and notice say. */
/** The jobs list's filters as the query string carries them (bulk actions select by them). */
export interface JobsQuery { state?: string; queue?: string; task?: string; before?: number }

export const BULK_ACTIONS: Record<BulkAction, { label: string; done: string }> = {
  cancel: { label: "Cancel", done: "cancelled or asked to stop" },
  requeue: { label: "Requeue", done: "queued again" },
  replay: { label: "Replay", done: "replayed as new jobs" },
};
export type BulkAction = BulkOperation;

/** The selection a list filter gives for `action`, or null when the action has nothing to act on (or no filter is set). */
export function selectionFor(action: BulkAction, query: JobsQuery): JobSelection | null {
  const states: readonly string[] = BULK_OPERATIONS[action].states;
  if (query.state && !states.includes(query.state)) return null;
  const selection: JobSelection = {
    ...(query.state ? { state: query.state as JobState } : {}), ...(query.queue ? { queue: query.queue } : {}), ...(query.task ? { task: query.task } : {}),
  };
  return Object.keys(selection).length > 0 ? selection : null;
}

/** How many jobs each bulk action would change for this filter (its dry run); only actions with jobs to act on. */
export async function bulkCounts(db: Db, query: JobsQuery, app: App): Promise<[BulkAction, number][]> {
  const counts = await Promise.all((Object.keys(BULK_ACTIONS) as BulkAction[]).map(async (action): Promise<[BulkAction, number]> => {
    const selection = selectionFor(action, query);
    return [action, selection ? await BULK_OPERATIONS[action].run(db, selection, { dryRun: true, app }) : 0];
  }));
  return counts.filter(([, n]) => n > 0);
}

/** The bulk buttons under a filtered list, each posting the filter. */
export function BulkActions(props: { ctx: PageContext; query: JobsQuery; counts: [BulkAction, number][] }) {
  if (props.counts.length === 0) return null;
  const fields = { state: props.query.state ?? "", queue: props.query.queue ?? "", task: props.query.task ?? "" };
  return (
    <p class="card" id="bulk">
      Every job this filter takes (at most 10,000 a click):{" "}
      {props.counts.map(([action, n]) => (
        <Post ctx={props.ctx} action={`${props.ctx.base}/bulk/${action}`} fields={fields}
          label={`${BULK_ACTIONS[action].label} ${n} job${n === 1 ? "" : "s"}`} kind={action === "cancel" ? "danger" : "primary"} />
      ))}
    </p>
  );
}
