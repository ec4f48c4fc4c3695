// job.db: a task body reaches the database its run claimed the job from, on every driver; what it writes
// there commits on its own, whatever the job's outcome.
import { beforeAll, expect, it } from "vitest";
import * as v from "valibot";
import { sql } from "drizzle-orm";
import { createApp, Fail, runOnce, type Db } from "../../src/index.js";
import { forEachDriver } from "../support/drivers.js";

forEachDriver((h) => {
  beforeAll(async () => {
    await h().db.execute(sql`create table if not exists job_db_notes (job_id bigint, note text)`);
    await h().db.execute(sql`truncate job_db_notes`);
  });

  it("the body reads and writes through job.db, the same database the run claimed from", async () => {
    const app = createApp();
    const seen: Db[] = [];
    const note = app.task("notes.write", { args: v.object({ note: v.string(), fail: v.boolean() }) }, async ({ note, fail }, job) => {
      seen.push(job.db);
      await job.db.execute(sql`insert into job_db_notes values (${job.id}, ${note})`);
      const [row] = (await job.db.execute(sql`select count(*)::int as n from job_db_notes where job_id = ${job.id}`) as any).rows ?? [];
      if (fail) throw new Fail("after the write");
      return { notes: row?.n ?? null };
    });
    const kept = await note.using(h().db).enqueue({ note: "kept", fail: false });
    const failed = await note.using(h().db).enqueue({ note: "written anyway", fail: true });
    await runOnce(app, { db: h().db });

    expect(seen).toHaveLength(2);
    for (const db of seen) expect(db).toBe(h().db);
    expect(await h().rows(`select id, state, result from akadze.all_jobs order by id`)).toEqual([
      { id: kept, state: "succeeded", result: { notes: 1 } },
      { id: failed, state: "failed", result: null },
    ]);
    // A write through job.db is not part of the outcome: the failed job's note stays.
    expect(await h().rows(`select job_id, note from job_db_notes order by job_id`)).toEqual([
      { job_id: kept, note: "kept" }, { job_id: failed, note: "written anyway" },
    ]);
  });
});
