// The forms that create and change a runtime schedule (the same functions as `akadze schedules create|update`):
// the form's text fields become a `createSchedule` entry or an `updateSchedule` change, and back.
import { InvalidInput } from "../../core/errors.js";
import type { RuntimeSchedule, RuntimeScheduleEntry, ScheduleChange } from "../../ops/runtime-schedules.js";
import { Layout, Notice, Post, type PageContext } from "./layout.js";
import { CSRF_FIELD } from "./session.js";

/** A schedule form's fields, as the browser sends them. */
export interface ScheduleFields {
  name: string; tenant: string; task: string; cron: string; timezone: string; every: string; args: string; catchUp: string; overlap: string;
}
const FIELD_NAMES = ["name", "tenant", "task", "cron", "timezone", "every", "args", "catchUp", "overlap"] as const;

/** An empty form: no timing yet, args `{}`, the default policies. */
export const NEW_SCHEDULE_FIELDS: ScheduleFields = {
  name: "", tenant: "", task: "", cron: "", timezone: "", every: "", args: "{}", catchUp: "latest", overlap: "allow",
};

/** The fields of a posted form (a missing one is blank). @example const fields = scheduleFieldsOf(await c.req.parseBody()); */
export function scheduleFieldsOf(body: Record<string, unknown>): ScheduleFields {
  const fields = { ...NEW_SCHEDULE_FIELDS };
  for (const key of FIELD_NAMES) fields[key] = typeof body[key] === "string" ? (body[key] as string).trim() : "";
  return fields;
}

/** A stored runtime schedule as the edit form shows it. @example <ScheduleFormPage fields={fieldsOfSchedule(schedule)} ... /> */
export function fieldsOfSchedule(s: RuntimeSchedule): ScheduleFields {
  return {
    name: s.name, tenant: s.tenant ?? "", task: s.task, cron: s.cron ?? "", timezone: s.timezone ?? "", every: s.everyMs === null ? "" : String(s.everyMs),
    args: JSON.stringify(s.args ?? {}, null, 2), catchUp: s.catchUp === "latest" ? "latest" : String(s.catchUp.all), overlap: s.overlap,
  };
}

// Digits are milliseconds (as the edit form shows a period); any other text is a duration such as "1h", which validation reads.
const every = (text: string) => (text === "" ? undefined : /^\d+$/.test(text) ? Number(text) : text);
// "latest" (or blank), or how many missed slots to catch up; other text goes on to validation, which says what is allowed.
const catchUp = (text: string) => (text === "" || text === "latest" ? "latest" : /^\d+$/.test(text) ? { all: Number(text) } : text);

function argsOf(fields: ScheduleFields, name: string): unknown {
  if (fields.args === "") return {};
  try {
    return JSON.parse(fields.args);
  } catch (error) {
    throw new InvalidInput(`Invalid schedule ${JSON.stringify(name)}: args must be JSON (${(error as Error).message})`);
  }
}

/** The `createSchedule` entry a new-schedule form gives; throws InvalidInput for args that are not JSON. @example await createSchedule(db, entryOfFields(fields), { app }); */
export function entryOfFields(fields: ScheduleFields): RuntimeScheduleEntry {
  return {
    name: fields.name, task: fields.task, args: argsOf(fields, fields.name),
    ...(fields.tenant ? { tenant: fields.tenant } : {}),
    ...(fields.cron ? { cron: fields.cron } : {}), ...(fields.timezone ? { timezone: fields.timezone } : {}),
    ...(fields.every ? { every: every(fields.every) as RuntimeScheduleEntry["every"] } : {}),
    catchUp: catchUp(fields.catchUp) as RuntimeScheduleEntry["catchUp"], overlap: fields.overlap as RuntimeScheduleEntry["overlap"],
  } as RuntimeScheduleEntry;
}

/**
 * The `updateSchedule` change an edit form gives. The timing is sent only when the form changed it: an unchanged
 * timing keeps the pending slot (a new one fires from the first slot after now). Throws InvalidInput for args
 * that are not JSON, or a form with neither cron nor every.
 * @example await updateSchedule(db, name, changeOfFields(fields, current), { app });
 */
export function changeOfFields(fields: ScheduleFields, current: RuntimeSchedule): ScheduleChange {
  const what = `change of schedule ${JSON.stringify(current.name)}`;
  const was = fieldsOfSchedule(current);
  const change: ScheduleChange = {
    task: fields.task, tenant: fields.tenant || null, args: argsOf(fields, current.name),
    catchUp: catchUp(fields.catchUp) as ScheduleChange["catchUp"], overlap: fields.overlap as ScheduleChange["overlap"],
  };
  if (fields.cron === "" && fields.every === "") throw new InvalidInput(`Invalid ${what}: give either cron or every, not both or neither`);
  if (fields.cron !== was.cron || fields.timezone !== was.timezone || fields.every !== was.every) {
    Object.assign(change, {
      cron: fields.cron || undefined, timezone: fields.timezone || undefined, every: every(fields.every),
    });
  }
  return change;
}

/** The new-schedule and edit pages: the form, the problem that sent it back, and on the edit page the Delete button. */
export function ScheduleFormPage(props: { ctx: PageContext; fields: ScheduleFields; tasks: string[]; editing?: string; problem?: string }) {
  const { ctx, fields, editing } = props;
  const title = editing === undefined ? "New schedule" : `Schedule ${editing}`;
  const action = editing === undefined ? `${ctx.base}/schedules/new` : `${ctx.base}/schedules/${encodeURIComponent(editing)}/edit`;
  // A task the app no longer registers stays selectable, so the form shows what is stored (saving it says why it cannot stay).
  const tasks = fields.task && !props.tasks.includes(fields.task) ? [...props.tasks, fields.task] : props.tasks;
  return (
    <Layout ctx={ctx} title={title} active="overview">
      <h1>{title}</h1>
      <Notice text={props.problem} problem />
      {tasks.length === 0 ? <p class="card">This app registers no tasks, so a schedule would have nothing to enqueue: register a task with app.task first.</p> : (
        <form class="card schedule" method="post" action={action} id="schedule-form">
          <input type="hidden" name={CSRF_FIELD} value={ctx.csrf ?? ""} />
          {editing === undefined && <label>Name<input name="name" value={fields.name} required placeholder="tenant-7.report" /></label>}
          <label>Tenant<input name="tenant" value={fields.tenant} placeholder="none" /></label>
          <label>Task<select name="task" required>
            {tasks.map((t) => <option value={t} selected={t === fields.task}>{t}</option>)}
          </select></label>
          <label>Cron<input name="cron" value={fields.cron} placeholder="0 9 * * *" /></label>
          <label>Time zone (cron only)<input name="timezone" value={fields.timezone} placeholder="UTC" /></label>
          <label>Or every (ms, or 30s, 5m, 2h, 1d)<input name="every" value={fields.every} placeholder="1h" /></label>
          <label>Args (JSON)<textarea name="args" rows={4}>{fields.args}</textarea></label>
          <label>Catch up after a gap (latest, or how many missed slots)<input name="catchUp" value={fields.catchUp} /></label>
          <label>While the previous slot's job is active<select name="overlap">
            <option value="allow" selected={fields.overlap !== "skip"}>allow: enqueue the slot anyway</option>
            <option value="skip" selected={fields.overlap === "skip"}>skip: drop the slot</option>
          </select></label>
          <div><button type="submit" class="primary">{editing === undefined ? "Create schedule" : "Save changes"}</button> <a href={ctx.base}>Cancel</a></div>
        </form>
      )}
      {editing !== undefined && (
        <div class="card" id="delete-schedule">
          <h2>Delete</h2>
          <p class="muted">Its jobs already enqueued stay; no slot fires after this.</p>
          <Post ctx={ctx} action={`${ctx.base}/schedules/${encodeURIComponent(editing)}/delete`} label={`Delete schedule ${editing}`} kind="danger" />
        </div>
      )}
    </Layout>
  );
}
