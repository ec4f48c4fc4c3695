import { sql, type SQL } from "drizzle-orm";
import { byBytes, candidateColumns, TURN_ORDER, walkBound, type FairScan, type FairWay } from "./fair.js";

/**
 * Fair claims that walk the tenants and their sub-keys (fair.ts): a process sends them once it has met a sub-key.
 *
 * - The claim walks the tenants with due jobs (`run_at` passed) in key order, from the tenant after the cursor
 *   (`akadze.fair_cursor`), wrapping around: one probe of `jobs_fair_idx` per tenant, at most `batchSize`
 *   tenants. Tenants whose jobs are all delayed are not walked: the probe checks `run_at` in the index, job by
 *   job, without reading a row, so they cost no turn and only their index entries' reading.
 * - Each walked tenant's share of the batch is its weight's part of the walked tenants' weights
 *   (`akadze.fair_weights`, 1 when unset), in whole jobs that add up to the batch (`shareOf`). Within it, the
 *   claim walks the tenant's keys (its sub-keys) the same way, from the tenant's own cursor
 *   (`akadze.fair_sub_cursors`, written only for tenants with sub-keys), at most its share of keys, and each
 *   walked key offers its next due jobs, an equal part of the share.
 * - Then the claim's plain scan offers the first other jobs in claim order, as many as the batch still lacks
 *   and at least a tenant's share (jobs without a key, and any key's when the walk cannot fill the batch).
 * - The batch is cut by priority first, then by each job's round within its tenant (`fair_rank`: its rank, by
 *   its rank within its key and then the key's walk position, divided by the tenant's weight), then by the
 *   tenant's walk position: every tenant's first round goes before any tenant's second. Jobs without a key
 *   rank as one more tenant of weight 1.
 * - The cursors move to the last walked tenant and, per tenant, its last walked key, served or not (their due
 *   jobs may be for tasks or queues this claim does not take, or held by another claim), so the next claim
 *   serves the ones after. A claim that meets another claim's lock on a cursor leaves it: the other moves it.
 */

/** Whether a claim that walks sub-keys still met one (else the process goes back to turns after a while). */
const FAIR_SUB_KEYS_SEEN = sql`exists (select 1 from fair_keys where strpos(key, chr(1)) > 0)`;

/** The job's key as jobs_fair_idx orders it. */
const KEY = sql`j.fair_key collate "C"`;

/**
 * The first key with due jobs (at `now`) after `after`, and within `upTo` (a condition on it), as a scalar probe of
 * jobs_fair_idx. (run_at is a column of the index, so the scan checks it there: a delayed job costs no row read.)
 */
function nextKey(now: SQL, after: SQL, upTo?: SQL): SQL {
  return sql`(select j.fair_key from akadze.jobs j where j.state = 'queued' and j.fair_key is not null and j.run_at <= ${now}
    and ${KEY} > ${after}${upTo ? sql` and ${upTo}` : sql``} order by ${KEY} limit 1)`;
}

/** The condition: the key sorts before `end`. */
function keyBefore(end: SQL): SQL {
  return sql`${KEY} < ${end}`;
}

/** The most jobs one walked key offers a claim (see `fair_candidates`). */
const KEY_OFFER_BOUND = 64;

/**
 * A walked tenant's share of a claim of `batchSize`, from its `weight`, the weights walked up to it (its own
 * included) and `fair_phase`: the whole jobs of its weight's part, the floor or the ceiling of it, so the
 * shares add up to the batch (tenants' weights laid end to end on the batch, each taking the jobs whose points
 * fall in its stretch). Where the remainder falls is drawn per claim: concurrent claims walk from the same
 * cursor, and with the ceiling for every tenant (until 2026-12-04) each locked more jobs than its batch kept,
 * the same tenants' extra jobs in every one of them, so the last claim found those tenants' jobs held and filled
 * its batch from the backlog. At least 1: a walked tenant of a small weight among heavy ones still gets its turn.
 */
function shareOf(batchSize: number): SQL {
  const upTo = sql`sum(weight) over (order by n)`;
  const at = (walked: SQL) => sql`${batchSize}::bigint * (${walked} + (select phase from fair_phase)) / sum(weight) over ()`;
  return sql`greatest(1, ${at(upTo)} - ${at(sql`${upTo} - weight`)})::int`;
}

/**
 * `fair_walk (tenant, first_key, n, weight, share)`: the tenants a claim serves, in walk order `n`, with the
 * first of their keys that has due jobs and their share of the batch; `fair_keys (tenant, key, m, share)`: each
 * walked tenant's keys in its own walk order `m`, and how many jobs each offers; and `fair_candidates`, each
 * walked key's next due jobs. They come before the plain scan, which offers the rest (`fairPlainScan`).
 */
function fairCandidatesCtes(o: FairScan): SQL[] {
  const bound = walkBound(o.batchSize);
  // (run_at is a column of jobs_fair_idx, so the scan checks it in the index: a delayed job costs no row read.
  // Jobs due only because they expired or a cancel was asked are not looked for: the plain scan ends them.)
  const key = KEY;
  // (A scalar subquery, not a join: only as a parameter can the cursor bound the index scan.)
  const cursor = sql`(select key from fair_from)`;
  const next = (after: SQL, upTo?: SQL) => nextKey(o.now, after, upTo);
  const before = keyBefore;
  const tenantOf = (k: SQL) => sql`split_part(${k}, chr(1), 1)`;
  return [
    sql`fair_from as (select coalesce((select key from akadze.fair_cursor where id = 1), '') as key)`,
    // A loose index scan: each step reads the next tenant's first key of jobs_fair_idx, so the walk costs one
    // probe a tenant however many jobs and sub-keys it holds. After the cursor first; then from the start up to it.
    sql`fair_walk as (
      with recursive after_cursor(key, n) as (
        select ${next(sql`${cursor} || chr(2)`)}, 1
        union all
        select ${next(sql`${tenantOf(sql`a.key`)} || chr(2)`)}, a.n + 1
        from after_cursor a where a.key is not null and a.n < ${bound}
      ),
      walked_after as (select count(*)::int as n from after_cursor where key is not null),
      from_start(key, n) as (
        select ${next(sql`''`, before(sql`${cursor} || chr(2)`))}, (select n from walked_after) + 1
        where (select n from walked_after) < ${bound}
        union all
        select ${next(sql`${tenantOf(sql`s.key`)} || chr(2)`, before(sql`${cursor} || chr(2)`))}, s.n + 1
        from from_start s where s.key is not null and s.n < ${bound}
      ),
      walked as (select key, n from after_cursor where key is not null union all select key, n from from_start where key is not null),
      weighed as (select ${tenantOf(sql`w.key`)} as tenant, w.key as first_key, w.n, coalesce(fw.weight, 1) as weight
        from walked w left join akadze.fair_weights fw on fw.key = ${tenantOf(sql`w.key`)}),
      -- (Where the batch's remainder falls: a random point of the walked weights, drawn once per claim.)
      fair_phase as (select floor(random() * coalesce(sum(weight), 0))::bigint as phase from weighed)
      select tenant, first_key, n, weight, ${shareOf(o.batchSize)} as share from weighed
    )`,
    // Each walked tenant's keys, from its own cursor (after it, then from its first key up to it), at most its
    // share of them. A tenant without sub-keys has one key: the walk's first probe found it, and with a share of
    // one no more is asked.
    sql`fair_keys as (
      with recursive walk(tenant, key, m, share, cur, first_key, wrapped) as (
        select w.tenant, coalesce(a.key, w.first_key), 1, w.share, c.key, w.first_key, a.key is null
        from fair_walk w left join akadze.fair_sub_cursors c on c.tenant = w.tenant
        cross join lateral (select case when c.key is not null then ${next(sql`c.key`, before(sql`w.tenant || chr(2)`))} end as key) a
        union all
        -- One probe a step: the next key before the range's end (the tenant's, or once wrapped, up to and with
        -- its cursor: no key lies between cur and cur \x01); none found before wrapping, its first key again if
        -- the walk began after it.
        select s.tenant, coalesce(p.key, case when not s.wrapped and ${byBytes(sql`s.first_key`)} <= s.cur then s.first_key end),
          s.m + 1, s.share, s.cur, s.first_key, s.wrapped or p.key is null
        from walk s cross join lateral (
          select ${next(sql`s.key`, before(sql`case when s.wrapped then coalesce(s.cur || chr(1), s.tenant || chr(2)) else s.tenant || chr(2) end`))} as key
        ) p
        where s.m < s.share and s.key is not null
      )
      -- (Passed through json only for the planner: it estimates a recursive walk at thousands of keys, each
      -- with its lateral probe, and a plan costed that high is compiled by JIT at ten times the claim's cost.
      -- A set from json is estimated at 100 rows.)
      select * from jsonb_to_recordset((select jsonb_agg(jsonb_build_object('tenant', tenant, 'key', key, 'm', m, 'share', share))
          from (select tenant, key, m, ceil(share::float8 / count(*) over (partition by tenant))::int as share from walk where key is not null) w))
        as k(tenant text, key text, m int, share int)
    )`,
    // (As for limited keys: the constant inner limit lets the planner walk jobs_fair_idx; the outer one stops
    // it, and so the locking, after the key's share. A key offers at most KEY_OFFER_BOUND jobs however large its
    // share: the plain scan offers the rest of a batch that few keys share, and the planner costs each key's
    // probe by it, so a walk of many keys is not costed past JIT's threshold.)
    sql`fair_candidates as (
      select x.* from fair_keys k cross join lateral (
        select * from (
          select ${candidateColumns(o.stop)}
          from akadze.jobs j
          where ${key} = k.key and ${o.eligible} and ${o.unlimited}
          order by j.priority desc nulls last, j.run_at, j.id
          limit ${sql.raw(String(Math.min(Math.max(1, Math.floor(o.batchSize)), KEY_OFFER_BOUND)))}
          for update of j skip locked
        ) y limit k.share
      ) x
    )`,
    // What the walked keys' shares leave of the batch, keyed jobs with a turn offer in turn order (jobs_tag_idx;
    // the plain scan reads only jobs without one), as many as the plain scan may offer.
    sql`fair_walk_more as (
      select ${candidateColumns(o.stop)}
      from akadze.jobs j
      where j.fair_tag is not null and ${o.eligible} and ${o.unlimited} and j.id not in (select id from fair_candidates)
      order by ${TURN_ORDER}
      limit ${fairPlainRoom(o.batchSize)}
      for update of j skip locked
    )`,
  ];
}

/**
 * What a fair claim's plain scan offers, after the walked keys' candidates (`fair_candidates`): jobs not among
 * them (`exclude`, for its where clause), at most `room` (an outer limit): what the batch still lacks, and at
 * least a tenant's share, so jobs without a key get their turn as one more tenant. Past that the plain scan
 * would only lock rows the batch cut drops.
 */
function fairPlainScan(batchSize: number): { exclude: SQL; room: SQL } {
  return {
    // (Parked keyed jobs, without a turn, are both the walk's and the plain scan's.)
    exclude: sql`and j.id not in (select id from fair_candidates)`,
    room: fairPlainRoom(batchSize),
  };
}

/** How many jobs the plain scan (and the keyed jobs with a turn past the walked keys' shares) may offer. */
function fairPlainRoom(batchSize: number): SQL {
  return sql`(select greatest(${batchSize} - (select count(*) from fair_candidates),
        ceil(${batchSize}::float8 / ((select count(*) from fair_walk) + 1)))::int)`;
}

/**
 * The body of the `candidates` CTE for a fair claim that walks sub-keys: `offered` (the plain and limited
 * candidates) and the walked keys' jobs, each ranked within its key, then within its tenant (by that rank, then its
 * key's walk position), that rank made a round by the tenant's weight, and cut to the batch.
 */
function fairCandidates(offered: SQL[], batchSize: number): SQL {
  return sql`select c.id, c.priority, c.run_at, c.stop, c.limited, c.fair_key,
        ceil(row_number() over (partition by c.tenant order by c.priority desc, c.key_rank, c.m nulls last, c.run_at, c.id)::float8
          / coalesce(w.weight, 1))::int as fair_rank, w.n as walk
      from (
        select u.*, split_part(u.fair_key, chr(1), 1) as tenant, k.m,
          row_number() over (partition by u.fair_key order by u.priority desc, u.run_at, u.id) as key_rank
        from (${sql.join([...offered, sql`select * from fair_candidates`, sql`select * from fair_walk_more`], sql` union all `)}) u left join fair_keys k on k.key = u.fair_key
      ) c left join fair_walk w on w.tenant = c.tenant
      order by c.priority desc, fair_rank, walk nulls last, c.run_at, c.id
      limit ${batchSize}`;
}

/**
 * Moves the cursor to the last walked tenant, skipping it when another claim holds it: past every tenant walked,
 * served or not, so tenants that offer this claim nothing never hold the walk in place. A walk that came round to
 * the cursor's own tenant leaves the row alone. Each walked tenant with sub-keys gets its own cursor moved the same way to its last walked key
 * (tenants without sub-keys have one key and need none).
 */
function fairCursorCtes(): SQL[] {
  return [
    sql`fair_next as (select tenant as key from (select tenant from fair_walk order by n desc limit 1) l where tenant <> (select key from fair_from))`,
    sql`fair_moved as (
      update akadze.fair_cursor f set key = n.key from fair_next n
      where f.id = (select id from akadze.fair_cursor where id = 1 for update skip locked)
      returning f.id
    )`,
    sql`fair_first as (
      insert into akadze.fair_cursor (id, key) select 1, key from fair_next where not exists (select 1 from akadze.fair_cursor)
      on conflict do nothing
      returning id
    )`,
    sql`fair_sub_next as (
      select distinct on (tenant) tenant, key from fair_keys
      where tenant in (select tenant from fair_keys where key <> tenant)
      order by tenant, m desc
    )`,
    sql`fair_sub_moved as (
      update akadze.fair_sub_cursors c set key = n.key from fair_sub_next n
      where c.tenant = n.tenant and c.tenant in (select tenant from akadze.fair_sub_cursors
        where tenant in (select tenant from fair_sub_next) for update skip locked)
      returning c.tenant
    )`,
    sql`fair_sub_first as (
      insert into akadze.fair_sub_cursors (tenant, key) select tenant, key from fair_sub_next n
      where not exists (select 1 from akadze.fair_sub_cursors c where c.tenant = n.tenant)
      on conflict do nothing
      returning tenant
    )`,
  ];
}

/** A fair claim by the walk over tenants and their sub-keys (a process that has met sub-keys). */
export function fairByWalk(o: FairScan): FairWay {
  return {
    before: fairCandidatesCtes(o),
    plainScan: fairPlainScan(o.batchSize),
    candidates: (offered) => fairCandidates(offered, o.batchSize),
    after: fairCursorCtes(),
    report: sql`, 'fairSubKeys', ${FAIR_SUB_KEYS_SEEN}`,
  };
}
