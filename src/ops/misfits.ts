// Jobs that wait for something that is not there: a task no running app defines (a typo, or producer and
// consumer on different versions), or a limitKey no `setLimit` ever configured (it runs unlimited).
// One statement; the worker and `akadze dev` warn with it, the CLI lists it, the metrics count it.
import { queryJson, type Db } from "../db/query.js";
import { findMisfitsStatement, type Misfits } from "../sql/reads/find-misfits.js";

export type { Misfits, UnknownTaskRow, UnlimitedKeyRow } from "../sql/reads/find-misfits.js";


/**
 * Queued jobs whose task is not in `knownTasks`, and active jobs whose limitKey has no limit, in one statement.
 * @example const { unknownTasks } = await findMisfits(db, [...app.tasks.keys()]);
 */
export async function findMisfits(db: Db, knownTasks: string[]): Promise<Misfits> {
  return queryJson<Misfits>(db, findMisfitsStatement(knownTasks));
}

/**
 * The warnings for what `findMisfits` found: one line per unknown task and per unlimited key.
 * @example for (const line of misfitWarnings(await findMisfits(db, [...app.tasks.keys()]))) console.warn(line);
 */
export function misfitWarnings(misfits: Misfits): string[] {
  return [
    ...misfits.unknownTasks.map((r) => `${r.jobs} queued job${r.jobs === 1 ? "" : "s"} of task ${JSON.stringify(r.task)} (queue ${r.queue}) wait for an app that defines it: this app does not (a typo, or another version?)`),
    ...misfits.unlimitedKeys.map((r) => `${r.jobs} job${r.jobs === 1 ? "" : "s"} use limitKey ${JSON.stringify(r.key)}, which has no limit: they run unlimited until setLimit(db, ${JSON.stringify(r.key)}, ...)`),
  ];
}
