// A study for issue 38, item 3 (not part of `npm run bench`): the floor of a fair claim that reads one index in
// order, because each keyed job was given its place at enqueue (a tag: start-time fair queueing), against the
// plain claim of the same batch; and what giving the tag costs the enqueue. Raw SQL on akadze's migrated schema,
// two databases side by side: "today" as migrated, and "tags" with a `fair_tag` column whose two indexes replace
// `jobs_fair_idx`. Statements run alternately in transactions that are rolled back (EXPLAIN ANALYZE, TIMING OFF);
// medians. FAIR-TAGS.md has a run and what it says.
//
//   npx tsx bench/fair-tags.ts            # 20 runs of each statement
//   npx tsx bench/fair-tags.ts 40         # 40 runs
import pg from "pg";
import { sql } from "drizzle-orm";
import { openAkadze, type AkadzeTarget } from "./akadze-db.js";
import { loadJobs, type Layout } from "./fair-claim-cost.js";
import { PG_HOST, PG_PORT, rolledBack } from "./databases.js";
import { median } from "./stats.js";

const RUNS = Number(process.argv[2] ?? 20);
const BATCH = 250;
const JOBS = 50_000;

/** What a claim writes: the same in both (the lease columns as the runtime's claim sets them matter little here). */
const LEASE = `update akadze.jobs j set state = 'running', lease_owner = 'study', attempt = j.attempt + 1, started_at = now()
  from picked where j.id = picked.id returning j.id, j.fair_key`;
/** The plain claim: jobs_due_idx in order (its `nulls last` spelled out, or the planner sorts the whole queue). */
const PLAIN = `with picked as (select id from akadze.jobs where state = 'queued' and run_at <= now()
  order by priority desc nulls last, run_at, id limit ${BATCH} for update skip locked) ${LEASE}`;
/** The tagged claim: jobs_tag_idx in order; a job not yet due is passed in the index (`run_at` is a key column). */
const TAGGED = `with picked as (select id from akadze.jobs where state = 'queued' and fair_key is not null and run_at <= now()
  order by priority desc nulls last, fair_tag, run_at, id limit ${BATCH} for update skip locked) ${LEASE}`;

/** The tags' schema: the claim's order, and each key's greatest tag for the enqueue. */
const TAG_SCHEMA = [
  "alter table akadze.jobs add column fair_tag double precision",
  "drop index akadze.jobs_fair_idx",
  `create index jobs_tag_idx on akadze.jobs (priority desc nulls last, fair_tag, run_at, id) where state = 'queued' and fair_key is not null`,
  `create index jobs_key_tag_idx on akadze.jobs (fair_key, fair_tag) where state = 'queued' and fair_key is not null`,
];

/** Today's enqueue of keyed jobs, reduced to its insert. */
const ENQUEUE_TODAY = `insert into akadze.jobs (task, queue, args, run_at, fair_key)
  select 'bench.tenant', 'default', '{}'::jsonb, now(), k from unnest($1::text[]) k`;
/**
 * The tagged enqueue: a key's jobs go after its greatest queued tag, or at the queue's least queued tag (the
 * claims' virtual time) if that is later: a new key, or one idle for a while, starts with the others' next turn.
 */
const ENQUEUE_TAGGED = `with v as (select coalesce((select fair_tag from akadze.jobs where state = 'queued' and fair_key is not null
    order by priority desc nulls last, fair_tag limit 1), 0) as v),
  input as (select k as key, row_number() over (partition by k order by ord) as n from unnest($1::text[]) with ordinality t(k, ord)),
  last as materialized (select i.key, (select max(fair_tag) from akadze.jobs j where j.state = 'queued' and j.fair_key = i.key) as l
    from (select distinct key from input) i)
  insert into akadze.jobs (task, queue, args, run_at, fair_key, fair_tag)
  select 'bench.tenant', 'default', '{}'::jsonb, now(), i.key, greatest(v.v, coalesce(l.l, v.v)) + i.n
  from input i join last l using (key) cross join v`;

/** Delayed keys beside the due ones: none, tags among the due keys' (enqueued with them), or below all (the claims' virtual time has passed them). */
type Delayed = "none" | "fresh" | "stale";
interface Case { keys: number; layout: Layout; delayed: Delayed }
const CASES: Case[] = [
  { keys: 100, layout: "mixed", delayed: "none" }, { keys: 10_000, layout: "mixed", delayed: "none" },
  { keys: 100, layout: "bursts", delayed: "none" }, { keys: 10_000, layout: "bursts", delayed: "none" },
  { keys: 100, layout: "mixed", delayed: "fresh" }, { keys: 100, layout: "mixed", delayed: "stale" },
];
const DELAYED_KEYS = 1_000;
const DELAYED_PER_KEY = 1_000;

interface Side { target: AkadzeTarget; client: pg.Client }

async function open(label: string, changes: string[]): Promise<Side> {
  const target = await openAkadze("node-postgres", label, { poolSize: 1 });
  const client = new pg.Client({ connectionString: `postgres://postgres@${PG_HOST}:${PG_PORT}/${target.database}` });
  await client.connect();
  for (const change of changes) await client.query(change);
  return { target, client };
}

/** `keys` keys sharing JOBS due jobs and the delayed keys, as fair-claim-cost.ts lays them out; tagged on the tags' schema. */
async function load(side: Side, c: Case, tagged: boolean): Promise<void> {
  await side.client.query("truncate akadze.jobs cascade");
  const delayed = c.delayed === "none" ? undefined : { keys: DELAYED_KEYS, perKey: DELAYED_PER_KEY };
  await loadJobs(side.target.db, c.keys, Math.ceil(JOBS / c.keys), c.layout, delayed,
    tagged ? { delayed: c.delayed === "fresh" ? sql`j` : sql`0` } : undefined);
}

/** Planning + execution ms of `text`, rolled back. */
async function explained(client: pg.Client, text: string, values: unknown[] = []): Promise<number> {
  return rolledBack(client, async () => {
    const plan = (await client.query(`explain (analyze, timing off, format json) ${text}`, values)).rows[0]["QUERY PLAN"][0];
    return plan["Planning Time"] + plan["Execution Time"];
  });
}

async function keysServed(client: pg.Client, text: string): Promise<number> {
  return rolledBack(client, async () => new Set((await client.query(text)).rows.map((r) => r.fair_key)).size);
}

const today = await open("fairtoday", []);
const tags = await open("fairtags", TAG_SCHEMA);
try {
  console.log(`Claims of ${BATCH} over ${JOBS.toLocaleString("en-US")} due keyed jobs; planning + execution ms, medians of ${RUNS}`);
  console.log("| keys | layout | delayed jobs beside | plain | tagged | tagged ÷ plain | keys served: plain / tagged |");
  console.log("| --- | --- | --- | --- | --- | --- | --- |");
  for (const c of CASES) {
    await load(tags, c, true);
    const plain: number[] = [];
    const tagged: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      plain.push(await explained(tags.client, PLAIN));
      tagged.push(await explained(tags.client, TAGGED));
    }
    const delayed = c.delayed === "none" ? "0" : `${(DELAYED_KEYS * DELAYED_PER_KEY).toLocaleString("en-US")}, tags ${c.delayed === "fresh" ? "among the due ones'" : "below every due one's"}`;
    console.log(`| ${c.keys.toLocaleString("en-US")} | ${c.layout} | ${delayed} | ${median(plain).toFixed(2)} | ${median(tagged).toFixed(2)} | ${(median(tagged) / median(plain)).toFixed(2)}× | ${await keysServed(tags.client, PLAIN)} / ${await keysServed(tags.client, TAGGED)} |`);
  }

  console.log(`\nEnqueue of 1,000 keyed jobs beside ${JOBS.toLocaleString("en-US")} queued (100 keys), one statement; planning + execution ms, medians of ${RUNS} (a VACUUM before each)`);
  console.log("| keys in the statement | today (jobs_fair_idx) | tagged (jobs_tag_idx, jobs_key_tag_idx) | tagged ÷ today |");
  console.log("| --- | --- | --- | --- |");
  const base: Case = { keys: 100, layout: "mixed", delayed: "none" };
  await load(today, base, false);
  await load(tags, base, true);
  for (const keys of [1, 10, 1_000]) {
    const names = Array.from({ length: 1_000 }, (_, i) => `t${String((i % keys) + 1).padStart(6, "0")}`);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      // (Each rolled-back insert leaves dead index entries that the next run's probes would step over.)
      await today.client.query("vacuum akadze.jobs");
      a.push(await explained(today.client, ENQUEUE_TODAY, [names]));
      await tags.client.query("vacuum akadze.jobs");
      b.push(await explained(tags.client, ENQUEUE_TAGGED, [names]));
    }
    console.log(`| ${keys.toLocaleString("en-US")} | ${median(a).toFixed(2)} | ${median(b).toFixed(2)} | ${(median(b) / median(a)).toFixed(2)}× |`);
  }
} finally {
  for (const side of [today, tags]) {
    await side.client.end();
    await side.target.close();
  }
}
