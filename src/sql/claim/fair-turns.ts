import { sql, type SQL } from "drizzle-orm";
import { candidateColumns, TURN_ORDER, walkBound, type FairScan, type FairWay } from "./fair.js";

/**
 * The most parked jobs one claim gives their turns (a row update each, about as dear as the claim's own): a
 * tenant's burst queued for later then delays another key's parked jobs by at most its size ÷ this many claims.
 */
const UNPARK_BOUND = 1000;

/** The claims' virtual time: the latest turn a fair claim took, 0 before the first. */
const VIRTUAL_TIME = sql`coalesce((select tag from akadze.fair_cursor where id = 1), 0)`;

/**
 * Fair claims by turns (a process that has met no sub-keys: `fairSubKeys` off). Each keyed job has its turn,
 * `fair_tag`, given by its enqueue (`fairTurnsOf`) or, for a job queued another way or before it was due, by the
 * first claim that finds it due: one step, 1 ÷ its tenant's weight, after its key's last queued job, and never
 * before the claims' virtual time (`akadze.fair_cursor.tag`, the latest turn a claim took). So each key's first
 * job comes before any key's second, and a key new to the queue starts at the others' next turn, not behind their
 * backlog.
 *
 * - The claim reads due keyed jobs in turn order through one index (`jobs_tag_idx`), as a plain claim reads
 *   `jobs_due_idx`: no walk over the keys, at most `batchSize` rows locked.
 * - A keyed job queued before it is due (a delay, a runAt, a retry's backoff), or queued another way than an
 *   enqueue (a retry, a requeue, a replay, an earlier version's enqueue), is parked: it has no turn, so the turn
 *   order never reads past it, and takes its turn when a claim finds it due (`fair_parked`).
 * - Its plain scan offers the other jobs (`fairTurnPlainScan`); a job without a key takes the turn after the
 *   virtual time of its rank among them, as one more key of weight 1; a keyed job without a turn yet likewise
 *   among its key's.
 * - The batch is cut by priority, then turn; a key's higher-priority jobs take its earliest turns. The virtual
 *   time moves to the latest turn claimed.
 */
function fairTurnCtes(o: FairScan & { unpark: boolean; priorities: boolean }): SQL[] {
  return [
    sql`fair_vt as (select ${VIRTUAL_TIME} as vt)`,
    ...(!o.unpark ? [] : [
    // Parked jobs come due: keyed jobs queued before they were due (a delay, a runAt, a retry's backoff) have no
    // turn yet (jobs_parked_idx), so the turn order never holds one, and none takes a turn given long ago. The
    // claim gives the due ones theirs (fairTurnCursorCtes), the earliest due first, at most UNPARK_BOUND (or four
    // batches); till then the plain scan offers them, at the virtual time. Only when the last claim saw parked
    // jobs due (`fairParkedDue`, `unpark`): most fair claims neither read nor plan these CTEs.
    sql`fair_parked as (
      select p.id, p.fair_key, p.priority, p.run_at from akadze.jobs p
      where p.state = 'queued' and p.fair_key is not null and p.fair_tag is null and p.run_at <= ${o.now}
      order by p.run_at limit ${sql.raw(String(Math.max(UNPARK_BOUND, 4 * Math.max(1, Math.floor(o.batchSize)))))}
      for update of p skip locked
    )`]),
    // (eligible holds state = 'queued', so the scan reads jobs_tag_idx in its order; run_at is a column of the
    // index, so a job not due yet costs no row read.)
    sql`fair_candidates as (
      select ${candidateColumns(o.stop)}
      from akadze.jobs j
      where j.fair_tag is not null and ${o.eligible} and ${o.unlimited}
      order by ${TURN_ORDER}
      limit ${walkBound(o.batchSize)}
      for update of j skip locked
    )`,
    // A key's higher-priority jobs take its earliest turns (fairTurnCandidates), so its jobs of the lowest priority
    // read take later ones than their own, and jobs of that priority past the read may then make the cut: as many
    // more of them as the read holds jobs of a higher priority, in turn order from the last read (none when the
    // read holds one priority: the scan is then never run). Only while the last claim's turns read spanned
    // priorities (`fairPriorities`, `priorities`): a claim that meets them first ranks its lowest priority's jobs
    // on the turns it read, which may put a key with urgent jobs later in that claim, never earlier.
    ...(!o.priorities ? [] : [sql`fair_lowest as (
      select min(priority) as priority, max(fair_tag) filter (where priority = (select min(priority) from fair_candidates)) as tag,
        count(*) filter (where priority > (select min(priority) from fair_candidates)) as higher
      from fair_candidates
    )`,
    sql`fair_more as (
      select ${candidateColumns(o.stop)}
      from akadze.jobs j
      where j.fair_tag is not null and j.priority = (select priority from fair_lowest) and j.fair_tag >= (select tag from fair_lowest)
        and ${o.eligible} and ${o.unlimited} and j.id not in (select id from fair_candidates)
      order by ${TURN_ORDER}
      limit (select higher from fair_lowest)
      for update of j skip locked
    )`]),
  ];
}

/**
 * A fair claim's plain scan by turns: it reads only jobs without a turn, so none of the turns read (`fair_candidates`)
 * needs leaving out; it offers as many jobs as the batch lacks, or, when
 * the turns read fill it, one a turn from the virtual time to the latest of them (at least one): jobs without a
 * key are one more key of weight 1, taking the turns from the virtual time on (`fairTurnCandidates`), so more of
 * them could not make the cut, and each job it locked past that would be held from other claims for nothing.
 */
function fairTurnPlainScan(batchSize: number): { exclude: SQL; room: SQL } {
  return {
    exclude: sql``,
    room: sql`(select greatest(${batchSize} - count(*), 1, least(${batchSize}, ceil(max(fair_tag) - (select vt from fair_vt))))::int from fair_candidates)`,
  };
}

/**
 * The body of the `candidates` CTE for a fair claim by turns: `offered` and the turns read, each with its turn
 * (`fair_rank`; `walk` is null), cut to the batch.
 */
function fairTurnCandidates(offered: SQL[], batchSize: number, priorities: boolean): SQL {
  // A key's higher-priority jobs take its earliest turns: the k-th of its jobs here in claim order takes the k-th
  // of their turns (with one priority, its own). Jobs without a key are one partition of that order too (their
  // turns are null): the k-th of them takes the k-th turn from the virtual time, as does a key's k-th job without a
  // turn yet (parked, come due: its key's turns from the virtual time, until the claim gives them theirs).
  const vt = sql`(select vt from fair_vt)`;
  return sql`select c.id, c.priority, c.run_at, c.stop, c.limited, c.fair_key, c.fair_rank, null::int as walk
      from (
        select u.id, u.priority, u.run_at, u.stop, u.limited, u.fair_key,
          case when u.fair_tag is null then ${vt} + u.k - 1
            else coalesce(nth_value(u.fair_tag, u.k::int) over (partition by u.fair_key order by u.fair_tag
              rows between unbounded preceding and unbounded following), ${vt}) end as fair_rank
        from (select o.*, row_number() over (partition by o.fair_key order by o.priority desc, o.fair_tag, o.run_at, o.id) as k
          from (${sql.join([...offered, sql`select * from fair_candidates`, ...(priorities ? [sql`select * from fair_more`] : [])], sql` union all `)}) o) u
      ) c
      order by c.priority desc, c.fair_rank, c.run_at, c.id
      limit ${batchSize}`;
}

/**
 * Moves the virtual time to the latest turn claimed, skipping it when another claim holds its row (that one moves
 * it), and gives the due parked jobs their turns (`unpark`). Migration 0024 makes the row; only where it is missing
 * does a claim insert it, and a claim beside another's uncommitted insert then waits for it.
 */
function fairTurnCursorCtes(claimed: SQL, unpark: boolean): SQL[] {
  const key = sql`k.fair_key`;
  return [
    sql`fair_vt_next as (select greatest((select vt from fair_vt), (select max(fair_rank) from ${claimed})) as tag)`,
    // (Each parked key's first turn, after the turns this claim took (its own parked jobs' too), then its jobs a
    // step apart; none this claim took: a row is updated once a statement.)
    ...(!unpark ? [] : [sql`fair_unparked as (
      update akadze.jobs j set fair_tag = t.tag from (
        select p.id, k.first + (row_number() over (partition by p.fair_key order by p.priority desc, p.run_at, p.id) - 1) * k.step as tag
        from fair_parked p join (select k.fair_key, ${fairTurnsOf(key, sql`1`, sql`greatest((select tag from fair_vt_next),
            (select max(c.fair_rank) from ${claimed} c where c.fair_key = ${key}) + ${fairStep(key)})`)} as first, ${fairStep(key)} as step
          from (select distinct fair_key from fair_parked) k) k on k.fair_key = p.fair_key
      ) t
      where j.id = t.id and j.id not in (select id from ${claimed})
      returning j.id
    )`]),
    sql`fair_vt_moved as (
      update akadze.fair_cursor f set tag = n.tag from fair_vt_next n
      where f.id = (select id from akadze.fair_cursor where id = 1 for update skip locked) and n.tag > f.tag
      returning f.id
    )`,
    // (Only on a schema made without akadze's migration 0024 (drizzle-kit's path), whose first claims make the row.)
    sql`fair_vt_first as (
      insert into akadze.fair_cursor (id, key, tag) select 1, '', tag from fair_vt_next
      where tag is not null and not exists (select 1 from akadze.fair_cursor)
      on conflict do nothing
      returning id
    )`,
  ];
}

/**
 * Whether a parked keyed job is due at `now`: the next fair claim by turns gives parked jobs their turns only then.
 * Asked for the earliest parked job in index order (jobs_parked_idx), so it is one probe whatever the statistics
 * say: as an `exists`, the planner read a million delayed jobs' rows to find none due (220 ms).
 */
function fairParkedDue(now: SQL): SQL {
  return sql`coalesce((select j.run_at from akadze.jobs j where j.state = 'queued' and j.fair_key is not null and j.fair_tag is null
      order by j.run_at limit 1) <= ${now}, false)`;
}

/**
 * Whether a fair claim by turns met a sub-key (the process then walks them: fair-walk.ts): among the turns
 * it read, or, when it read none (its tasks or queues have none due), among the first due turns of any task.
 */
function fairTurnSubKeysSeen(now: SQL, batchSize: number): SQL {
  return sql`(exists (select 1 from fair_candidates where strpos(fair_key, chr(1)) > 0)
      or not exists (select 1 from fair_candidates) and exists (select 1 from (
        select j.fair_key from akadze.jobs j where j.state = 'queued' and j.fair_tag is not null and j.run_at <= ${now}
        order by ${TURN_ORDER} limit ${walkBound(batchSize)}) t
      where strpos(t.fair_key, chr(1)) > 0))`;
}

/**
 * The turn of the `ord`-th (from 1) of the jobs one statement queues under the stored key `key`: the first one
 * step (1 ÷ the tenant's weight) after the key's last queued turn and never before the virtual time `vt`, the next
 * ones a step apart.
 */
export function fairTurnsOf(key: SQL, ord: SQL, vt: SQL = VIRTUAL_TIME): SQL {
  const step = fairStep(key);
  const last = sql`(select j.fair_tag from akadze.jobs j where j.state = 'queued' and j.fair_tag is not null and j.fair_key = ${key}
      order by j.fair_tag desc limit 1)`;
  return sql`(greatest(${vt}, ${last} + ${step}) + (${ord} - 1) * ${step})`;
}

/** The step between the turns of the stored key `key`: 1 ÷ its tenant's weight. */
function fairStep(key: SQL): SQL {
  return sql`(1.0 / coalesce((select weight from akadze.fair_weights where key = split_part(${key}, chr(1), 1)), 1))`;
}

/**
 * A fair claim by turns (a process that has met no sub-keys): `claimed`, the claim's CTE of the jobs it took;
 * `unpark`, whether it gives the due parked jobs their turns (the last claim saw one due); `priorities`, whether
 * it reads on past its turns for a key's urgent jobs (the last claim's turns spanned priorities).
 */
export function fairByTurns(o: FairScan & { unpark: boolean; priorities: boolean; claimed: SQL }): FairWay {
  return {
    before: fairTurnCtes(o),
    plainScan: fairTurnPlainScan(o.batchSize),
    candidates: (offered) => fairTurnCandidates(offered, o.batchSize, o.priorities),
    after: fairTurnCursorCtes(o.claimed, o.unpark),
    report: sql`, 'fairSubKeys', ${fairTurnSubKeysSeen(o.now, o.batchSize)}, 'parkedDue', ${fairParkedDue(o.now)},
      'fairPriorities', coalesce((select min(priority) <> max(priority) from fair_candidates), false)`,
  };
}
